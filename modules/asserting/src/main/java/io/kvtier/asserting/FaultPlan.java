package io.kvtier.asserting;

import java.time.Duration;
import java.util.Objects;

/**
 * Which faults a {@link FaultyTransferEngine} injects at random, per submitted batch.
 *
 * @param seed the seed of the draws; the same seed and submission order give the same faults
 * @param failProbability chance that a batch fails with a {@link
 *     io.kvtier.spi.TransferFailedException}
 * @param slowProbability chance that a batch completes {@code slowDelay} late
 * @param slowDelay the extra time of a slow batch, in the engine's time source
 * @param stuckProbability chance that a batch does not complete until {@link
 *     FaultyTransferEngine#releaseStuck()} or close
 */
public record FaultPlan(
    long seed,
    double failProbability,
    double slowProbability,
    Duration slowDelay,
    double stuckProbability) {

  /** Validates the fields. */
  public FaultPlan {
    Objects.requireNonNull(slowDelay, "slowDelay");
    probability("failProbability", failProbability);
    probability("slowProbability", slowProbability);
    probability("stuckProbability", stuckProbability);
    if (failProbability + slowProbability + stuckProbability > 1.0) {
      throw new IllegalArgumentException(
          "failProbability="
              + failProbability
              + " + slowProbability="
              + slowProbability
              + " + stuckProbability="
              + stuckProbability
              + " exceeds 1: lower one of them");
    }
    if (slowDelay.isNegative()) {
      throw new IllegalArgumentException("slowDelay=" + slowDelay + " must not be negative");
    }
  }

  private static void probability(String name, double p) {
    if (!(p >= 0.0 && p <= 1.0)) {
      throw new IllegalArgumentException(name + "=" + p + " must be between 0 and 1");
    }
  }

  /**
   * A plan that injects nothing at random; scripted faults still work.
   *
   * @return the plan
   */
  public static FaultPlan none() {
    return new FaultPlan(0, 0, 0, Duration.ZERO, 0);
  }

  /**
   * Whether the plan injects anything at random.
   *
   * @return true if any probability is positive
   */
  public boolean injectsAny() {
    return failProbability > 0 || slowProbability > 0 || stuckProbability > 0;
  }
}
