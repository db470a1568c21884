package io.kvtier.simulator;

import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Job;
import io.kvtier.core.cache.L3Work;
import io.kvtier.spi.TimeSource;

/**
 * The simulator's L3 executor: a work runs on the rank's thread inside {@code submit}, so the
 * store sees the same calls in the same order on every run, and its progress becomes visible by
 * the rank's virtual clock: step {@code i} at {@code submit time + (i + 1) * stepNanos}. A rank
 * with a larger step time is a rank with a slower store, and since each rank reads its own
 * clock, the ranks see different progress at one tick, which the engine must agree on.
 *
 * <p>Running the store call early is safe for the engine's contract: a put reads a host copy
 * that is committed (and protected) when the put is submitted, and a fetch writes only slots
 * reserved for it, which stay reserved until every rank reports the fetch finished.
 */
final class VirtualTimeL3Executor implements L3Executor {
  private final TimeSource clock;
  private final long stepNanos;

  /**
   * An executor for one rank.
   *
   * @param clock the rank's virtual clock
   * @param stepNanos virtual time each step of a work takes, at least 0
   */
  VirtualTimeL3Executor(TimeSource clock, long stepNanos) {
    if (stepNanos < 0) {
      throw new IllegalArgumentException("stepNanos=" + stepNanos + " must be >= 0");
    }
    this.clock = clock;
    this.stepNanos = stepNanos;
  }

  @Override
  public L3Job submit(L3Work work) {
    long start = clock.nanoTime();
    int steps = work.steps();
    int succeeded = 0;
    int ran = 0;
    while (ran < steps) {
      boolean ok;
      try {
        ok = work.step(ran);
      } catch (RuntimeException e) {
        // The engine's own executors turn a throwing store into a stopped work; so does this.
        ok = false;
      }
      ran++;
      if (!ok) {
        break;
      }
      succeeded++;
    }
    return new Job(start, succeeded, ran);
  }

  @Override
  public void close() {}

  /** Progress of a work that already ran, revealed by the clock. */
  private final class Job implements L3Job {
    private final long start;
    private final int succeeded;
    private final int ran;
    private volatile boolean cancelled;

    Job(long start, int succeeded, int ran) {
      this.start = start;
      this.succeeded = succeeded;
      this.ran = ran;
    }

    private long visibleSteps() {
      long elapsed = clock.nanoTime() - start;
      return stepNanos == 0 ? Long.MAX_VALUE : elapsed / stepNanos;
    }

    @Override
    public int stepsDone() {
      return (int) Math.min(succeeded, visibleSteps());
    }

    @Override
    public boolean finished() {
      // A cancelled work touches nothing after this point: it ran at submit.
      return cancelled || visibleSteps() >= ran;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }
}
