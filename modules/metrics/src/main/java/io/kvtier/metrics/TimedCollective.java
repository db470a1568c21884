package io.kvtier.metrics;

import io.kvtier.spi.Collective;
import io.kvtier.spi.ForwardingCollective;
import io.kvtier.spi.ReduceOp;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@link Collective} that times every call on a Micrometer registry: timer {@code
 * kvtier.collective.latency} with tags {@code op} (all_reduce, broadcast, await_broadcast,
 * barrier) and {@code tag} (the call site), whose count is the number of calls. The time includes the wait for the
 * slowest rank, which is what a skewed rank costs the others. A failed call is timed too, with
 * {@code outcome=error}.
 */
public final class TimedCollective extends ForwardingCollective {
  private final MeterRegistry registry;
  private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();

  /**
   * Wraps a collective.
   *
   * @param delegate the collective that does the work
   * @param registry where the timers go
   */
  public TimedCollective(Collective delegate, MeterRegistry registry) {
    super(delegate);
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    long start = System.nanoTime();
    boolean ok = false;
    try {
      long[] result = super.allReduce(op, values, tag);
      ok = true;
      return result;
    } finally {
      record("all_reduce", tag, ok, start);
    }
  }

  /** Timed as {@link #allReduce} is, under the same name; the delegate's own form. */
  @Override
  public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    long start = System.nanoTime();
    boolean ok = false;
    try {
      super.allReduceInto(op, values, result, tag);
      ok = true;
    } finally {
      record("all_reduce", tag, ok, start);
    }
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    long start = System.nanoTime();
    boolean ok = false;
    try {
      byte[] result = super.broadcast(root, payload, tag);
      ok = true;
      return result;
    } finally {
      record("broadcast", tag, ok, start);
    }
  }

  /**
   * Timed as op {@code await_broadcast}: a rank of an idle group waits in it for as long as the
   * group is idle, which would swamp the broadcasts' latencies.
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    long start = System.nanoTime();
    boolean ok = false;
    try {
      byte[] result = delegate.awaitBroadcast(root, payload, tag);
      ok = true;
      return result;
    } finally {
      record("await_broadcast", tag, ok, start);
    }
  }

  @Override
  public void barrier(String tag) {
    long start = System.nanoTime();
    boolean ok = false;
    try {
      super.barrier(tag);
      ok = true;
    } finally {
      record("barrier", tag, ok, start);
    }
  }

  private void record(String op, String tag, boolean ok, long start) {
    long nanos = System.nanoTime() - start;
    String site = String.valueOf(tag);
    String key = op + '\u0000' + site + '\u0000' + ok;
    timers
        .computeIfAbsent(
            key,
            k ->
                Timer.builder("kvtier.collective.latency")
                    .description(
                        "duration of collective calls, waiting for the slowest rank included")
                    .tag("op", op)
                    .tag("tag", site.toLowerCase(Locale.ROOT))
                    .tag("outcome", ok ? "success" : "error")
                    .register(registry))
        .record(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
  }
}
