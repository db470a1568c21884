package io.kvtier.collective.hazelcast;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * One time budget shared by several waits: each wait gets what the ones before it left, so the
 * waits together never exceed the budget. A rank whose group broke spends one on its best-effort
 * cluster calls, so that a survivor of a dead rank ends within the budget after naming it, however
 * many calls the cluster holds.
 */
final class CleanupBudget {
  private final LongSupplier nanoClock;
  private final long deadline;

  private CleanupBudget(LongSupplier nanoClock, long budgetNanos) {
    this.nanoClock = nanoClock;
    this.deadline = nanoClock.getAsLong() + budgetNanos;
  }

  /**
   * Starts a budget now, on the system's monotonic clock.
   *
   * @param millis the budget, at least 0
   * @return the budget
   */
  static CleanupBudget start(long millis) {
    return start(millis, System::nanoTime);
  }

  /**
   * Starts a budget now on the given clock.
   *
   * @param millis the budget, at least 0
   * @param nanoClock a monotonic clock in nanoseconds
   * @return the budget
   * @throws IllegalArgumentException if {@code millis} is negative
   */
  static CleanupBudget start(long millis, LongSupplier nanoClock) {
    if (millis < 0) {
      throw new IllegalArgumentException("a cleanup budget of " + millis + " ms is negative");
    }
    return new CleanupBudget(
        Objects.requireNonNull(nanoClock, "nanoClock"), TimeUnit.MILLISECONDS.toNanos(millis));
  }

  /**
   * The time left.
   *
   * @return nanoseconds until the budget is spent, 0 once it is
   */
  long remainingNanos() {
    return Math.max(0, deadline - nanoClock.getAsLong());
  }
}
