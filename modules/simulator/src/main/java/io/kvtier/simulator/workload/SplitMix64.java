package io.kvtier.simulator.workload;

import java.util.Objects;

/**
 * The SplitMix64 generator of WORKLOADS.md, the only source of randomness of every workload.
 *
 * <p>Java's {@code long} arithmetic already wraps modulo 2^64, so the specification's unsigned
 * additions and multiplications are plain {@code +} and {@code *}; only the shifts ({@code >>>})
 * and the reductions ({@link Long#remainderUnsigned}) must be the unsigned forms. Not thread-safe:
 * give each thread, or each independent draw sequence, its own instance.
 */
public final class SplitMix64 {

  private static final long GAMMA = 0x9E3779B97F4A7C15L;

  private long state;

  /**
   * A generator whose initial state is {@code seed}.
   *
   * @param seed the workload seed, read as an unsigned 64-bit integer
   */
  public SplitMix64(long seed) {
    this.state = seed;
  }

  /**
   * The next 64 random bits ({@code next_u64()} of the specification).
   *
   * @return the value, to be read as unsigned
   */
  public long nextLong() {
    state += GAMMA;
    long z = state;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /**
   * {@code next_u64() mod bound}, unsigned, with the modulo bias the specification accepts.
   *
   * @param bound the exclusive upper bound, at least 1
   * @return a value in {@code [0, bound)}
   */
  public int nextInt(int bound) {
    if (bound < 1) {
      throw new IllegalArgumentException("bound=" + bound + " must be >= 1");
    }
    return (int) Long.remainderUnsigned(nextLong(), bound);
  }

  /**
   * A uniform double in {@code [0, 1)} from the top 53 bits of the next value, for the continuous
   * draws of the generators (Zipf, exponential inter-arrival times).
   *
   * @return the value
   */
  public double nextDouble() {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }

  /**
   * Fills {@code out[from, from + count)} with tokens, each {@code next_u64() mod vocab}.
   *
   * @param out the destination
   * @param from the first index to write
   * @param count how many tokens to draw
   * @param vocab the vocabulary size, at least 1
   */
  public void fillTokens(int[] out, int from, int count, int vocab) {
    Objects.checkFromIndexSize(from, count, Objects.requireNonNull(out, "out").length);
    if (vocab < 1) {
      throw new IllegalArgumentException("vocab=" + vocab + " must be >= 1");
    }
    for (int i = from, end = from + count; i < end; i++) {
      out[i] = (int) Long.remainderUnsigned(nextLong(), vocab);
    }
  }

  /**
   * A new array of {@code count} tokens, each {@code next_u64() mod vocab}.
   *
   * @param count how many tokens, at least 0
   * @param vocab the vocabulary size, at least 1
   * @return the tokens
   */
  public int[] tokens(int count, int vocab) {
    if (count < 0) {
      throw new IllegalArgumentException("count=" + count + " must be >= 0");
    }
    int[] out = new int[count];
    fillTokens(out, 0, count, vocab);
    return out;
  }

  /**
   * Fisher-Yates shuffle from the end, exactly as specified: for {@code i} from {@code length - 1}
   * down to 1, swap {@code a[i]} with {@code a[next_u64() mod (i + 1)]}.
   *
   * @param a the array to permute in place
   */
  public void shuffle(int[] a) {
    Objects.requireNonNull(a, "a");
    for (int i = a.length - 1; i >= 1; i--) {
      int j = (int) Long.remainderUnsigned(nextLong(), i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }

  /**
   * A new generator seeded by this one's next value, so that independent draw sequences of one
   * workload (tokens, choices, arrival times) do not shift each other when a parameter that only
   * affects one of them changes.
   *
   * @return the new generator
   */
  public SplitMix64 fork() {
    return new SplitMix64(nextLong());
  }
}
