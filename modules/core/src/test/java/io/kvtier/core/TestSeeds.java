package io.kvtier.core;

import java.util.concurrent.ThreadLocalRandom;

/**
 * The master seed and iteration multiplier of core's randomized tests: {@code
 * -Dkvtier.tests.seed} (random when absent or empty) and {@code -Dkvtier.tests.multiplier}
 * (default 1). A failure is rethrown with the line that reproduces it.
 */
public final class TestSeeds {
  private TestSeeds() {}

  private static final long MASTER_SEED = parseSeed(System.getProperty("kvtier.tests.seed"));

  private static long parseSeed(String text) {
    if (text == null || text.isBlank()) {
      return ThreadLocalRandom.current().nextLong();
    }
    String t = text.strip();
    return t.startsWith("0x") ? Long.parseUnsignedLong(t.substring(2), 16) : Long.parseLong(t);
  }

  /**
   * The master seed of this JVM.
   *
   * @return the seed
   */
  public static long masterSeed() {
    return MASTER_SEED;
  }

  /**
   * Scales an iteration count by {@code kvtier.tests.multiplier}.
   *
   * @param base iterations of a normal run
   * @return the scaled count
   */
  public static int iterations(int base) {
    String text = System.getProperty("kvtier.tests.multiplier", "");
    int multiplier = text.isBlank() ? 1 : Integer.parseInt(text.strip());
    return Math.max(1, base * multiplier);
  }

  /**
   * Runs a randomized test body with the master seed, and on failure names the seed.
   *
   * @param body the test, given the seed
   */
  public static void run(java.util.function.LongConsumer body) {
    try {
      body.accept(MASTER_SEED);
    } catch (RuntimeException | AssertionError e) {
      throw new AssertionError(
          "randomized test failed; reproduce with -Dkvtier.tests.seed=" + MASTER_SEED, e);
    }
  }
}
