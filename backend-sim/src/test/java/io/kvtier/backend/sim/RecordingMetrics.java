package io.kvtier.backend.sim;

import io.kvtier.spi.BackendMetrics;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Metrics that keep counter totals and the count of recorded durations, for assertions. */
final class RecordingMetrics implements BackendMetrics {

  private final Map<String, AtomicLong> counters = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> durations = new ConcurrentHashMap<>();

  @Override
  public void increment(String name, long delta) {
    counters.computeIfAbsent(name, n -> new AtomicLong()).addAndGet(delta);
  }

  @Override
  public void recordNanos(String name, long nanos) {
    durations.computeIfAbsent(name, n -> new AtomicLong()).incrementAndGet();
  }

  long counter(String name) {
    AtomicLong v = counters.get(name);
    return v == null ? 0 : v.get();
  }

  long durationCount(String name) {
    AtomicLong v = durations.get(name);
    return v == null ? 0 : v.get();
  }
}
