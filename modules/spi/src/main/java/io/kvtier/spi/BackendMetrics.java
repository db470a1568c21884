package io.kvtier.spi;

/**
 * Where a backend reports what it measures. The engine adapts this to its metrics registry; a
 * backend never sees the registry's types. Implementations are thread-safe and cheap; backends
 * still report per batch, never per token.
 */
public interface BackendMetrics {

  /** Metrics that are dropped. */
  BackendMetrics NOOP =
      new BackendMetrics() {
        @Override
        public void increment(String name, long delta) {}

        @Override
        public void recordNanos(String name, long nanos) {}
      };

  /**
   * Adds to a counter.
   *
   * @param name dotted metric name, for example {@code transfer.bytes.d2h}
   * @param delta amount to add, not negative
   */
  void increment(String name, long delta);

  /**
   * Records one duration.
   *
   * @param name dotted metric name, for example {@code transfer.latency.h2d}
   * @param nanos the duration in nanoseconds
   */
  void recordNanos(String name, long nanos);
}
