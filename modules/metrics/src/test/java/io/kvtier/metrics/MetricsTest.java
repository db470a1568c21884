package io.kvtier.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The Micrometer bindings: backend metrics, timed collectives, the engine's meters. */
class MetricsTest {

  @Test
  void backendNamesBecomeMetersWithADirectionTag() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerBackendMetrics metrics = new MicrometerBackendMetrics(registry);

    metrics.increment("transfer.bytes.h2d", 4096);
    metrics.increment("transfer.bytes.h2d", 1024);
    metrics.increment("transfer.bytes.d2h", 8);
    metrics.recordNanos("transfer.latency.d2h", 2_000);
    metrics.increment("store.misses", 3);

    assertThat(registry.get("kvtier.transfer.bytes").tag("direction", "h2d").counter().count())
        .isEqualTo(5120);
    assertThat(registry.get("kvtier.transfer.bytes").tag("direction", "d2h").counter().count())
        .isEqualTo(8);
    assertThat(
            registry
                .get("kvtier.transfer.latency")
                .tag("direction", "d2h")
                .timer()
                .totalTime(TimeUnit.NANOSECONDS))
        .isEqualTo(2_000);
    assertThat(registry.get("kvtier.store.misses").counter().count()).isEqualTo(3);
    assertThatThrownBy(() -> metrics.increment("x", -1)).hasMessageContaining("delta=-1");
  }

  /** A one-rank group that answers at once, or fails like a watchdog when told to. */
  private static final class SoloCollective implements Collective {
    boolean fail;
    boolean closed;
    int intoCalls;

    @Override
    public int rank() {
      return 0;
    }

    @Override
    public int size() {
      return 1;
    }

    @Override
    public long[] allReduce(ReduceOp op, long[] values, String tag) {
      if (fail) {
        throw new CollectiveTimeoutException("rank 0 waited too long in " + tag);
      }
      return values.clone();
    }

    @Override
    public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
      intoCalls++;
      System.arraycopy(allReduce(op, values, tag), 0, result, 0, values.length);
    }

    @Override
    public byte[] broadcast(int root, byte[] payload, String tag) {
      return payload.clone();
    }

    @Override
    public void barrier(String tag) {}

    @Override
    public void close() {
      closed = true;
    }
  }

  @Test
  void collectiveCallsAreCountedAndTimedPerOperationTagAndOutcome() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    SoloCollective solo = new SoloCollective();
    TimedCollective timed = new TimedCollective(solo, registry);

    assertThat(timed.allReduce(ReduceOp.MIN, new long[] {3, 4}, "sync")).containsExactly(3, 4);
    long[] into = {5};
    timed.allReduceInto(ReduceOp.MIN, into, into, "sync");
    assertThat(into).containsExactly(5);
    assertThat(timed.broadcast(0, new byte[] {7}, "recv")).containsExactly(7);
    timed.barrier("end");
    solo.fail = true;
    assertThatThrownBy(() -> timed.allReduce(ReduceOp.MAX, new long[] {1}, "sync"))
        .isInstanceOf(CollectiveTimeoutException.class);
    timed.close();

    assertThat(
            registry
                .get("kvtier.collective.latency")
                .tags("op", "all_reduce", "tag", "sync", "outcome", "success")
                .timer()
                .count())
        .isEqualTo(2);
    assertThat(solo.intoCalls).as("allReduceInto reaches the delegate's own form").isEqualTo(1);
    assertThat(
            registry
                .get("kvtier.collective.latency")
                .tags("op", "all_reduce", "tag", "sync", "outcome", "error")
                .timer()
                .count())
        .isEqualTo(1);
    assertThat(
            registry
                .get("kvtier.collective.latency")
                .tags("op", "broadcast", "tag", "recv")
                .timer()
                .count())
        .isEqualTo(1);
    assertThat(registry.get("kvtier.collective.latency").tags("op", "barrier").timer().count())
        .isEqualTo(1);
    assertThat(timed.rank()).isZero();
    assertThat(timed.size()).isEqualTo(1);
    assertThat(solo.closed).isTrue();
  }

  /** Runs GCs until a weakly held sentinel is gone; weakly held meter state goes with it. */
  private static void collectWeaklyHeld() throws InterruptedException {
    WeakReference<Object> sentinel = new WeakReference<>(new Object());
    for (int i = 0; sentinel.get() != null; i++) {
      assertThat(i).as("GCs until a weak reference is cleared").isLessThan(100);
      System.gc();
      Thread.sleep(10);
    }
  }

  @Test
  void engineMetersFollowTheEngine() throws InterruptedException {
    TinyTransformer model = new TinyTransformer(ModelConfig.DEFAULTS);
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .layout(2, 4, 16, Float.BYTES, 4)
            .devicePages(32)
            .hostPages(128)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(512)
            .build();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Random random = new Random(7);
    try (ModelEngine engine =
        ModelEngine.open(model, config, new MicrometerBackendMetrics(registry))) {
      KvTierMeters.bind(registry, engine::stats);
      int[][] prompts = new int[6][];
      for (int i = 0; i < prompts.length; i++) {
        prompts[i] = new int[40];
        for (int t = 0; t < 40; t++) {
          prompts[i][t] = random.nextInt(512);
        }
      }
      // Six distinct prompts overflow the 32-page device pool, then the first comes back.
      for (int[] p : prompts) {
        engine.generate(p, 2);
      }
      engine.drain();
      engine.generate(prompts[0], 2);
      engine.drain();
      // A long-running server collects garbage: the meters must still read the engine after.
      collectWeaklyHeld();

      double deviceHits =
          registry.get("kvtier.cache.hits").tag("tier", "device").functionCounter().count();
      double hostHits =
          registry.get("kvtier.cache.hits").tag("tier", "host").functionCounter().count();
      assertThat(deviceHits + hostHits).isEqualTo(36);
      assertThat(hostHits).isPositive();
      assertThat(
              registry.get("kvtier.cache.misses").tag("tier", "device").functionCounter().count())
          .isEqualTo(7 * 40 - deviceHits);
      assertThat(registry.get("kvtier.cache.misses").tag("tier", "host").functionCounter().count())
          .isEqualTo(7 * 40 - 36);
      assertThat(
              registry
                  .get("kvtier.cache.evictions")
                  .tag("tier", "device")
                  .functionCounter()
                  .count())
          .isPositive();
      assertThat(
              registry
                  .get("kvtier.cache.loads")
                  .tag("outcome", "committed")
                  .functionCounter()
                  .count())
          .isPositive();
      assertThat(registry.get("kvtier.requests").functionCounter().count()).isEqualTo(7);
      assertThat(registry.get("kvtier.prefix.cache.queries").functionCounter().count())
          .isEqualTo(7 * 40);
      assertThat(registry.get("kvtier.prefix.cache.hits").functionCounter().count()).isEqualTo(36);
      // Full attention resumes from every matched token: the match is the hits.
      assertThat(registry.get("kvtier.prefix.cache.matched").functionCounter().count())
          .isEqualTo(36);
      assertThat(
              registry
                  .get("kvtier.cached.tokens")
                  .tag("cache_source", "host")
                  .functionCounter()
                  .count())
          .isEqualTo(hostHits);
      assertThat(
              registry
                  .get("kvtier.cached.tokens")
                  .tag("cache_source", "storage")
                  .functionCounter()
                  .count())
          .isZero();
      double usage =
          registry.get("kvtier.kv.cache.usage.perc").tag("tier", "device").gauge().value();
      assertThat(usage).isBetween(0.0, 1.0);
      assertThat(registry.get("kvtier.tokens").tag("kind", "generated").functionCounter().count())
          .isEqualTo(14);
      double free =
          registry.get("kvtier.pool.pages").tags("tier", "device", "state", "free").gauge().value();
      double evictable =
          registry
              .get("kvtier.pool.pages")
              .tags("tier", "device", "state", "evictable")
              .gauge()
              .value();
      double held =
          registry
              .get("kvtier.pool.pages")
              .tags("tier", "device", "state", "protected")
              .gauge()
              .value();
      assertThat(free + evictable + held).isEqualTo(32);
      assertThat(usage).isEqualTo(1.0 - free / 32);
      assertThat(registry.get("kvtier.pool.capacity").tag("tier", "host").gauge().value())
          .isEqualTo(128);
      assertThat(registry.get("kvtier.transfer.bytes").tag("direction", "h2d").counter().count())
          .isPositive();
    }
  }
}
