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
 * them but not free), and {@code L(r)} the prompt blocks of the requests the router has in flight
 * at r (its load). The highest score wins; a tie (in particular no overlap anywhere) goes to the
 * least loaded, then round robin. Like Dynamo's {@code overlap weight x cached blocks - load}.
 *
 * @param overlapWeight weight of a cached block against a block of load
 * @param hostWeight weight of a host block against a device block, 0 to 1
 */
public record RouteScore(double overlapWeight, double hostWeight) {

  /** The defaults: a cached block is worth a block of load; a host block half a device block. */
  public static final RouteScore DEFAULT = new RouteScore(1.0, 0.5);

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
