package io.kvtier.metrics;

import io.kvtier.spi.BackendMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The backends' {@link BackendMetrics} on a Micrometer registry: {@code increment} feeds a
 * counter, {@code recordNanos} a timer, each named {@code kvtier.} plus the backend's dotted name.
 * A last segment that names a copy direction ({@code h2d}, {@code d2h}) becomes a {@code
 * direction} tag, so that {@code transfer.bytes.h2d} and {@code transfer.bytes.d2h} are one meter
 * {@code kvtier.transfer.bytes} with two series, as Prometheus queries expect.
 *
 * <p>Thread-safe: copy engines report from their own threads. Meters are looked up once per
 * name and cached.
 */
public final class MicrometerBackendMetrics implements BackendMetrics {
  private final MeterRegistry registry;
  private final ConcurrentHashMap<String, Counter> counters = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();

  /**
   * Creates the adapter.
   *
   * @param registry where the meters are registered
   */
  public MicrometerBackendMetrics(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  @Override
  public void increment(String name, long delta) {
    if (delta < 0) {
      throw new IllegalArgumentException(
          "increment of " + name + " by delta=" + delta + ": counters only grow");
    }
    counters.computeIfAbsent(name, this::newCounter).increment(delta);
  }

  @Override
  public void recordNanos(String name, long nanos) {
    timers.computeIfAbsent(name, this::newTimer).record(nanos, TimeUnit.NANOSECONDS);
  }

  private Counter newCounter(String name) {
    MeterName meter = MeterName.of(name);
    return Counter.builder(meter.name())
        .tags(meter.tags())
        .description("backend counter " + name)
        .register(registry);
  }

  private Timer newTimer(String name) {
    MeterName meter = MeterName.of(name);
    return Timer.builder(meter.name())
        .tags(meter.tags())
        .description("backend duration " + name)
        .register(registry);
  }

  /** A backend name split into a meter name and its direction tag. */
  record MeterName(String name, String[] tags) {
    static MeterName of(String backendName) {
      Objects.requireNonNull(backendName, "name");
      int dot = backendName.lastIndexOf('.');
      String last = backendName.substring(dot + 1);
      if (dot > 0 && (last.equals("h2d") || last.equals("d2h"))) {
        return new MeterName(
            "kvtier." + backendName.substring(0, dot), new String[] {"direction", last});
      }
      return new MeterName("kvtier." + backendName, new String[0]);
    }
  }
}
