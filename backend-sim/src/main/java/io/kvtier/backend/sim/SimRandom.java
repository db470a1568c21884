package io.kvtier.backend.sim;

/**
 * Counter-based pseudo-random numbers: every draw is a hash of (seed, rank, stream, sequence)
 * with the SplitMix64 finalizer, not the next state of a generator. A batch's jitter and faults
 * then depend only on its own coordinates, never on how many draws other code made before, which
 * keeps a simulation bit-for-bit reproducible when the order of unrelated calls changes.
 */
final class SimRandom {

  private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

  private SimRandom() {}

  /**
   * The SplitMix64 finalizer: a bijection of {@code long} with good avalanche.
   *
   * @param z the input
   * @return the mixed value
   */
  static long mix64(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /**
   * 64 random bits for one coordinate.
   *
   * @param seed the master seed
   * @param rank the rank
   * @param stream what the draw is for (jitter, failure, stall per direction)
   * @param sequence the batch's sequence number
   * @return the bits
   */
  static long bits(long seed, int rank, int stream, long sequence) {
    long z = mix64(seed + GOLDEN_GAMMA * (rank + 1L));
    z = mix64(z + GOLDEN_GAMMA * (stream + 1L));
    return mix64(z + GOLDEN_GAMMA * sequence);
  }

  /**
   * A uniform double in {@code [0, 1)} for one coordinate.
   *
   * @param seed the master seed
   * @param rank the rank
   * @param stream what the draw is for
   * @param sequence the batch's sequence number
   * @return the number
   */
  static double unit(long seed, int rank, int stream, long sequence) {
    return (bits(seed, rank, stream, sequence) >>> 11) * 0x1.0p-53;
  }
}
