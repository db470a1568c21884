package io.kvtier.spi;

/**
 * A monotonic nanosecond time source. The engine and the backends read time only through this
 * interface so that a test can drive a backend in virtual time. Implementations are thread-safe.
 */
@FunctionalInterface
public interface TimeSource {

  /** The wall clock: {@link System#nanoTime()}. */
  TimeSource SYSTEM = System::nanoTime;

  /**
   * The current time in nanoseconds; only differences between two readings are meaningful.
   *
   * @return the current time, never decreasing between calls
   */
  long nanoTime();
}
