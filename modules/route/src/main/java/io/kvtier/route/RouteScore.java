package io.kvtier.route;

/**
 * The router's choice of replica (docs/EVENTS.md, "Routing"):
 *
 * <pre>
 * score(r) = overlapWeight * (G(r) + hostWeight * H(r)) - L(r)
 * </pre>
 *
 * where {@code G(r)} is the number of the prompt's leading blocks on replica r's device, {@code
 * H(r)} the leading blocks after those it holds on its host (a load-back, cheaper than computing
 * them but not free), and {@code L(r)} the load: for each request the router has in flight at r,
 * the prompt blocks r did not cache when it was routed there (the prefill it asked for), at least
 * 1. The highest score wins; a tie (in particular no overlap anywhere) goes to the least loaded,
 * then round robin. Like Dynamo's {@code overlap weight x cached blocks - load}.
 *
 * <p>Why the uncached blocks and not the whole prompts: a replica's work for a request is the
 * prefill of what it does not cache, and a multi-turn chat routed to the replica that holds it
 * asks for little. Counting whole prompts makes a replica that holds a conversation look as busy
 * as one computing from scratch, and with 16 requests in flight per replica the load term (16
 * times ~14 blocks) outweighs any overlap (at most ~14 blocks): routing falls back to
 * least-loaded and loses the prefixes.
 *
 * @param overlapWeight weight of a cached block against a block of load
 * @param hostWeight weight of a host block against a device block, 0 to 1
 */
public record RouteScore(double overlapWeight, double hostWeight) {

  /**
   * The defaults: a cached block is worth 16 blocks of load; a host block half a device block.
   * Why so much: the load term adds up every request in flight at a replica (about {@code
   * --max-running} of them, 8 by default), while a cached block saves its prefill in this request
   * and, by keeping its prefix at one replica, in the later ones that share it. Measured with
   * {@code scripts/route-bench.sh} (docs/PERFORMANCE.md, "Routing across replicas"): a weight of
   * 1 reached 0.45 to 0.74 of the ideal hit rate, 4 reached 0.82 to 0.86, 8 reached 0.87 to 0.98
   * on the multi-turn workload over seven runs, 16 reached 0.96 to 1.06 over five; the
   * shared-prefix workload was at 0.97 to 1.01 from 8 on.
   */
  public static final RouteScore DEFAULT = new RouteScore(16.0, 0.5);

  /** Validates the weights. */
  public RouteScore {
    if (!(overlapWeight >= 0) || !(hostWeight >= 0 && hostWeight <= 1)) {
      throw new IllegalArgumentException(
          "overlapWeight="
              + overlapWeight
              + " hostWeight="
              + hostWeight
              + ": need overlapWeight >= 0 and 0 <= hostWeight <= 1");
    }
  }

  /**
   * The score of one replica.
   *
   * @param deviceBlocks G(r)
   * @param hostBlocks H(r)
   * @param loadBlocks L(r)
   * @return the score
   */
  public double score(int deviceBlocks, int hostBlocks, long loadBlocks) {
    return overlapWeight * (deviceBlocks + hostWeight * hostBlocks) - loadBlocks;
  }
}
