package io.kvtier.simulator.workload;

import java.util.Objects;

/**
 * Arrival times of a Poisson process: exponential gaps with mean {@code 1000 / ratePerSecond}
 * milliseconds, accumulated in a {@code double} so that rounding does not drift, and reported as
 * whole milliseconds. A rate of 0 means "all at once": every arrival is at time 0.
 */
final class PoissonArrivals {

  private final double ratePerSecond;
  private final SplitMix64 rng;
  private double nowMillis;

  /**
   * A process starting at time 0.
   *
   * @param ratePerSecond the mean arrival rate, at least 0 and finite
   * @param rng the generator of the gaps, used by this process only
   */
  PoissonArrivals(double ratePerSecond, SplitMix64 rng) {
    if (!(ratePerSecond >= 0) || Double.isInfinite(ratePerSecond)) {
      throw new IllegalArgumentException(
          "rate=" + ratePerSecond + " must be a finite number >= 0 (requests per second)");
    }
    this.ratePerSecond = ratePerSecond;
    this.rng = Objects.requireNonNull(rng, "rng");
  }

  /**
   * The next arrival time.
   *
   * @return milliseconds from the start, non-decreasing from call to call
   */
  long next() {
    if (ratePerSecond == 0) {
      return 0;
    }
    // 1 - u is in (0, 1], so the logarithm is finite
    nowMillis += -Math.log(1.0 - rng.nextDouble()) * 1000.0 / ratePerSecond;
    return (long) nowMillis;
  }
}
