package io.kvtier.collective.mpi.internal;

/**
 * How many payload slots the next call's guard frame has: the frame's shape must be the same on
 * every rank, or ranks at different calls would meet in an erroneous {@code MPI_Allreduce} (in
 * practice a hang or a truncation error on some ranks only) instead of a frame that shows the
 * desync everywhere. So the shape may depend only on what every rank has seen identically: the
 * calls they agreed on. This predicts the next call's payload length from the call that preceded
 * it the last time the same call came before: an engine calls from a few call sites in a fixed
 * order, so after one pass every MIN/MAX rides in its frame and costs one {@code MPI_Allreduce},
 * whatever its length (up to the cap), while a 1-value call keeps a 3-long frame. A wrong guess
 * costs a second call (a payload too long for the frame), or a frame longer than needed.
 *
 * <p>Deterministic: its state changes only in {@link #agreed}, with values that are identical on
 * every rank once the frame agreed. One thread at a time uses it (the collective's callers are
 * serialized).
 */
final class MpiFrameCapacity {

  /** Direct-mapped slots, keyed by the previous call's fingerprint; a power of two. */
  private static final int SLOTS = 64;

  private final int cap;
  private final long[] previousPrints = new long[SLOTS];
  // The need of the call that followed, plus one: 0 marks an empty slot.
  private final int[] needsPlusOne = new int[SLOTS];
  private long previous;

  /**
   * Creates the predictor of a freshly joined group.
   *
   * @param cap the longest payload that rides in a frame ({@code mpi.inline-longs})
   */
  MpiFrameCapacity(int cap) {
    if (cap < 1) {
      throw new IllegalArgumentException("cap=" + cap + " must be at least 1");
    }
    this.cap = cap;
  }

  /**
   * The payload slots of the next call's frame: at least 1 (a broadcast's size rides there).
   *
   * @return the capacity, identical on every rank that agreed on the same calls
   */
  int next() {
    int slot = slot(previous);
    int need = previousPrints[slot] == previous ? needsPlusOne[slot] - 1 : 0;
    return Math.max(1, need);
  }

  /**
   * Records a call whose frame agreed on every rank.
   *
   * @param print the call's fingerprint without its sequence number ({@link MpiCall#fingerprint})
   * @param length the payload it would put in its frame: the length of a MIN/MAX, 1 for a
   *     broadcast, 0 for a SUM or a barrier
   */
  void agreed(long print, int length) {
    int slot = slot(previous);
    previousPrints[slot] = previous;
    needsPlusOne[slot] = (length <= cap ? length : 0) + 1;
    previous = print;
  }

  private static int slot(long print) {
    return (int) (print ^ (print >>> 29)) & (SLOTS - 1);
  }
}
