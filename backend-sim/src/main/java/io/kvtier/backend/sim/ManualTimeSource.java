package io.kvtier.backend.sim;

import io.kvtier.spi.TimeSource;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A virtual clock that moves only when a test (or the simulator) advances it. Threads waiting
 * for a virtual time, such as a {@link SimTransferEngine} handle's {@code await()}, are woken on
 * every advance. Thread-safe.
 *
 * <p>Listeners registered with {@link #addListener} run on the advancing thread after the time
 * has changed and outside this clock's lock, so that a listener may take its own locks.
 */
public final class ManualTimeSource implements TimeSource {

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition advanced = lock.newCondition();
  private final CopyOnWriteArrayList<Runnable> listeners = new CopyOnWriteArrayList<>();
  private volatile long now;

  /** A clock that starts at 0 ns. */
  public ManualTimeSource() {
    this(0L);
  }

  /**
   * A clock that starts at the given time.
   *
   * @param startNanos the initial reading
   */
  public ManualTimeSource(long startNanos) {
    this.now = startNanos;
  }

  /**
   * The current virtual time.
   *
   * @return nanoseconds; changes only through {@link #advance} and {@link #advanceTo}
   */
  @Override
  public long nanoTime() {
    return now;
  }

  /**
   * Moves the clock forward.
   *
   * @param delta how far, not negative
   * @throws IllegalArgumentException if {@code delta} is negative or the time would overflow
   */
  public void advance(Duration delta) {
    Objects.requireNonNull(delta, "delta");
    if (delta.isNegative()) {
      throw new IllegalArgumentException(
          "delta=" + delta + " is negative: a time source never goes back");
    }
    long nanos;
    try {
      nanos = delta.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("delta=" + delta + " overflows a long of nanoseconds", e);
    }
    lock.lock();
    try {
      move(Math.addExact(now, nanos));
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "advancing now=" + now + " by delta=" + delta + " overflows a long", e);
    } finally {
      lock.unlock();
    }
    notifyListeners();
  }

  /**
   * Moves the clock forward to an absolute time; moving it to the current time does nothing.
   *
   * @param nanos the new time, not before {@link #nanoTime()}
   * @throws IllegalArgumentException if {@code nanos} is before the current time
   */
  public void advanceTo(long nanos) {
    lock.lock();
    try {
      if (nanos < now) {
        throw new IllegalArgumentException(
            "nanos=" + nanos + " is before now=" + now + ": a time source never goes back");
      }
      move(nanos);
    } finally {
      lock.unlock();
    }
    notifyListeners();
  }

  /**
   * Blocks until the virtual time reaches {@code nanos}, or a wall-clock timeout passes.
   *
   * @param nanos the virtual time to wait for
   * @param wallTimeout how long to wait at most, in real time
   * @return true if the time was reached, false on timeout
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean awaitTime(long nanos, Duration wallTimeout) throws InterruptedException {
    long remaining = Objects.requireNonNull(wallTimeout, "wallTimeout").toNanos();
    lock.lock();
    try {
      while (now < nanos) {
        if (remaining <= 0) {
          return false;
        }
        remaining = advanced.awaitNanos(remaining);
      }
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Registers a callback run after every advance (including {@code advanceTo} the current time).
   *
   * @param listener the callback; must not block for long
   */
  public void addListener(Runnable listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  /**
   * Removes a callback registered with {@link #addListener}; does nothing if it is not there.
   *
   * @param listener the callback
   */
  public void removeListener(Runnable listener) {
    listeners.remove(Objects.requireNonNull(listener, "listener"));
  }

  @Override
  public String toString() {
    return "ManualTimeSource[now=" + now + "ns]";
  }

  private void move(long nanos) {
    now = nanos;
    advanced.signalAll();
  }

  private void notifyListeners() {
    for (Runnable listener : listeners) {
      listener.run();
    }
  }
}
