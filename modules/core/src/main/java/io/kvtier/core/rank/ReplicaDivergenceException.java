package io.kvtier.core.rank;

/**
 * The replica digest check found ranks whose replicated state differs: some rank took a decision
 * from rank-local state (ARCHITECTURE.md §4). Raised on every rank at the same tick, because every
 * rank sees the same reduced minimum and maximum, so no rank is left waiting in a collective.
 *
 * <p>The digest is a 64-bit hash of every piece of replicated state (the cache's tree, pools and
 * ack queues, the engine's request queues and counters, the collective schedule so far); see
 * {@link RankEngine#replicaDigest()}.
 */
public class ReplicaDivergenceException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final long tick;
  private final long minDigest;
  private final long maxDigest;
  private final long localDigest;
  private final int rank;

  /**
   * Creates the exception.
   *
   * @param rank the rank that raises it
   * @param tick the tick whose check found the difference
   * @param minDigest the smallest digest over all ranks
   * @param maxDigest the largest digest over all ranks
   * @param localDigest this rank's digest
   * @param detail what else is known, for example which check found it; may be empty
   */
  public ReplicaDivergenceException(
      int rank, long tick, long minDigest, long maxDigest, long localDigest, String detail) {
    super(
        "replica divergence at tick "
            + tick
            + ": replica digests differ across ranks (min="
            + hex(minDigest)
            + ", max="
            + hex(maxDigest)
            + ", rank "
            + rank
            + " has "
            + hex(localDigest)
            + ")"
            + (detail.isEmpty() ? "" : "; " + detail)
            + ". A decision read rank-local state (copy completion, a wall clock, a local map or"
            + " allocation result); rerun with the same seed and a digest interval of 1 to find the"
            + " first tick, then look for the rule of ARCHITECTURE.md §4 that the step broke");
    this.rank = rank;
    this.tick = tick;
    this.minDigest = minDigest;
    this.maxDigest = maxDigest;
    this.localDigest = localDigest;
  }

  private static String hex(long v) {
    return String.format("%016x", v);
  }

  /**
   * The rank that raised it.
   *
   * @return the rank
   */
  public int rank() {
    return rank;
  }

  /**
   * The tick whose check found the difference.
   *
   * @return the tick, from 0
   */
  public long tick() {
    return tick;
  }

  /**
   * The smallest digest over all ranks.
   *
   * @return the digest
   */
  public long minDigest() {
    return minDigest;
  }

  /**
   * The largest digest over all ranks.
   *
   * @return the digest
   */
  public long maxDigest() {
    return maxDigest;
  }

  /**
   * This rank's digest.
   *
   * @return the digest
   */
  public long localDigest() {
    return localDigest;
  }
}
