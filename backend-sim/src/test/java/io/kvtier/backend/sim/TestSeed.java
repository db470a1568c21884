package io.kvtier.backend.sim;

import java.util.Random;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * The master seed of this module's randomized tests: {@code -Dkvtier.tests.seed} when set, a
 * random one otherwise. Register it with {@code @ExtendWith(TestSeed.class)} so that a failed
 * test prints the line that reproduces it.
 */
final class TestSeed implements TestWatcher {

  /** The master seed of this run. */
  static final long MASTER = pickSeed();

  /** How many times to scale iterations, from {@code -Dkvtier.tests.multiplier}. */
  static final int MULTIPLIER = pickMultiplier();

  /** Creates the watcher (JUnit instantiates it). */
  TestSeed() {}

  /**
   * A generator for one test, derived from the master seed and the test's name so that adding a
   * test does not change the others' draws.
   *
   * @param testName a stable name
   * @return the generator
   */
  static Random random(String testName) {
    return new Random(SimRandom.mix64(MASTER ^ testName.hashCode()));
  }

  @Override
  public void testFailed(ExtensionContext context, Throwable cause) {
    System.err.printf(
        "%s failed with master seed %d; reproduce with: ./mvnw -pl backend-sim test"
            + " -Dtest='%s' -Dkvtier.tests.seed=%d%n",
        context.getDisplayName(), MASTER, context.getRequiredTestClass().getSimpleName(), MASTER);
  }

  private static long pickSeed() {
    String value = System.getProperty("kvtier.tests.seed", "").strip();
    return value.isEmpty() ? new Random().nextLong() : Long.parseLong(value);
  }

  private static int pickMultiplier() {
    String value = System.getProperty("kvtier.tests.multiplier", "").strip();
    return value.isEmpty() ? 1 : Math.max(1, Integer.parseInt(value));
  }
}
