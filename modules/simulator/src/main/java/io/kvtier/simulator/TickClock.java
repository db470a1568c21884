package io.kvtier.simulator;

import io.kvtier.spi.TimeSource;

/**
 * The virtual clock of one simulated rank: it reads {@code tick * tickNanos}, set by the rank's
 * own thread at the start of each tick. Copy completion in the {@code sim} backend is a function
 * of the submission time and this clock, so it depends on the seed and the tick only, never on
 * how the JVM schedules the rank threads.
 */
final class TickClock implements TimeSource {
  private volatile long now;

  @Override
  public long nanoTime() {
    return now;
  }

  void set(long nanos) {
    if (nanos < now) {
      throw new IllegalArgumentException(
          "nanos=" + nanos + " is before now=" + now + ": a tick clock never goes back");
    }
    now = nanos;
  }
}
