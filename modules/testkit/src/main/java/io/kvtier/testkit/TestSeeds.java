package io.kvtier.testkit;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongConsumer;

/**
 * The master seed and the iteration multiplier of randomized tests.
 *
 * <p>The master seed comes from the system property {@value #SEED_PROPERTY} (decimal, or hex with
 * a {@code 0x} prefix); when it is absent or blank one is drawn at random once per JVM, so that
 * every test of a run derives its randomness from one printed number. A test derives its own
 * seed with {@link #seedFor(String)} from the master seed and a stable name, so that rerunning
 * one test alone with the printed master seed replays exactly what it did in the full run.
 *
 * <p>{@value #MULTIPLIER_PROPERTY} (default 1) scales iteration counts for long runs.
 */
public final class TestSeeds {

  /** The system property that fixes the master seed. */
  public static final String SEED_PROPERTY = "kvtier.tests.seed";

  /** The system property that scales iteration counts. */
  public static final String MULTIPLIER_PROPERTY = "kvtier.tests.multiplier";

  private TestSeeds() {}

  // Read once: every test of a JVM must see the same master seed, or the printed line would not
  // reproduce the run.
  private static final class Holder {
    static final long MASTER_SEED =
        parseSeed(System.getProperty(SEED_PROPERTY), ThreadLocalRandom.current().nextLong());
    static final int MULTIPLIER = parseMultiplier(System.getProperty(MULTIPLIER_PROPERTY));
  }

  /**
   * The master seed of this JVM.
   *
   * @return the seed from {@value #SEED_PROPERTY}, or a random one drawn once per JVM
   * @throws IllegalArgumentException if the property is set but is not a number
   */
  public static long masterSeed() {
    return Holder.MASTER_SEED;
  }

  /**
   * The iteration multiplier.
   *
   * @return the value of {@value #MULTIPLIER_PROPERTY}, 1 when absent or blank
   * @throws IllegalArgumentException if the property is set but is not a positive integer
   */
  public static int multiplier() {
    return Holder.MULTIPLIER;
  }

  /**
   * An iteration count scaled by the multiplier.
   *
   * @param base the count for a normal run, at least 1
   * @return {@code base * multiplier()}, saturated at {@link Integer#MAX_VALUE}
   */
  public static int scaled(int base) {
    if (base < 1) {
      throw new IllegalArgumentException("base=" + base + " must be >= 1");
    }
    return (int) Math.min(Integer.MAX_VALUE, (long) base * multiplier());
  }

  /**
   * The seed of one test or one randomized component, derived from the master seed.
   *
   * @param name a stable name, for example the test's class and method
   * @return a seed that depends only on the master seed and {@code name}
   */
  public static long seedFor(String name) {
    return mix(masterSeed(), name);
  }

  /**
   * A random generator seeded with {@link #seedFor(String)}.
   *
   * @param name a stable name, for example the test's class and method
   * @return a new generator
   */
  public static Random random(String name) {
    return new Random(seedFor(name));
  }

  /**
   * Runs a randomized body with the master seed and, when it fails, rethrows the failure with
   * the line that reproduces it; for tests that draw from one seed rather than from a {@link
   * Random} parameter of {@link SeedExtension}. The reproduce line names the calling method as
   * surefire's {@code -Dtest} filter ({@code SimpleClassName#method}).
   *
   * @param body the test, given the master seed
   * @throws AssertionError if {@code body} fails, carrying the reproduce line and the cause
   */
  public static void run(LongConsumer body) {
    Objects.requireNonNull(body, "body");
    String caller =
        StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
            .walk(frames -> frames.skip(1).findFirst())
            .map(f -> f.getDeclaringClass().getSimpleName() + "#" + testMethodOf(f.getMethodName()))
            .orElse("?");
    try {
      body.accept(masterSeed());
    } catch (RuntimeException | AssertionError e) {
      throw new AssertionError("randomized test failed; " + reproduceLine(caller), e);
    }
  }

  // A call from a lambda in a test method runs in a synthetic method lambda$<method>$<n>.
  private static String testMethodOf(String frameMethod) {
    if (frameMethod.startsWith("lambda$")) {
      int end = frameMethod.indexOf('$', "lambda$".length());
      return end < 0 ? frameMethod : frameMethod.substring("lambda$".length(), end);
    }
    return frameMethod;
  }

  /**
   * Derives a seed from a master seed and a name; the same inputs always give the same seed.
   *
   * @param master the master seed
   * @param name the name
   * @return the derived seed
   */
  public static long mix(long master, String name) {
    Objects.requireNonNull(name, "name");
    long h = master;
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      h = splitMix(h ^ (b & 0xFF));
    }
    return splitMix(h ^ name.length());
  }

  // The SplitMix64 finalizer: spreads nearby inputs over the whole range, so that tests whose
  // names differ by one character still get unrelated seeds.
  private static long splitMix(long x) {
    long z = x + 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /**
   * Parses a seed property value.
   *
   * @param value the property value: decimal, or hex with a {@code 0x} prefix; null or blank for
   *     random
   * @param random the seed to use when {@code value} is null or blank
   * @return the seed
   * @throws IllegalArgumentException if {@code value} is not a number
   */
  public static long parseSeed(String value, long random) {
    if (value == null || value.isBlank()) {
      return random;
    }
    String v = value.strip();
    try {
      if (v.startsWith("0x") || v.startsWith("0X")) {
        return Long.parseUnsignedLong(v.substring(2), 16);
      }
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          SEED_PROPERTY
              + "='"
              + value
              + "' is not a seed: give a decimal long such as"
              + " -D"
              + SEED_PROPERTY
              + "=42 or hex such as 0x2A, or leave it empty for a"
              + " random seed",
          e);
    }
  }

  /**
   * Parses a multiplier property value.
   *
   * @param value the property value; null or blank for 1
   * @return the multiplier, at least 1
   * @throws IllegalArgumentException if {@code value} is not a positive integer
   */
  public static int parseMultiplier(String value) {
    if (value == null || value.isBlank()) {
      return 1;
    }
    int m;
    try {
      m = Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          MULTIPLIER_PROPERTY
              + "='"
              + value
              + "' is not an integer: give a positive integer"
              + " such as -D"
              + MULTIPLIER_PROPERTY
              + "=10, or leave it empty for 1",
          e);
    }
    if (m < 1) {
      throw new IllegalArgumentException(
          MULTIPLIER_PROPERTY + "=" + m + " must be >= 1: give a positive integer such as 10");
    }
    return m;
  }

  /**
   * The line that reproduces a failed randomized test.
   *
   * @param testName the test, for example {@code SomeTest#method}, used as surefire's {@code
   *     -Dtest} filter
   * @return {@code "reproduce with -Dkvtier.tests.seed=<seed> -Dtest=<testName>"}
   */
  public static String reproduceLine(String testName) {
    Objects.requireNonNull(testName, "testName");
    return "reproduce with -D" + SEED_PROPERTY + "=" + masterSeed() + " -Dtest=" + testName;
  }
}
