package io.kvtier.asserting;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TimeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The {@code faulty} store's keys, and the wrappers it builds: {@link FaultyKvStore}'s thrown
 * calls and their counts, {@link SlowKvStore}'s delegation. The end-to-end use (kvtier serve
 * --l3 faulty under load) is the chaos soak's (modules/cli ServeChaosSoakTest).
 */
class FaultyKvStoreProviderTest {

  private static final KvStoreSpec SPEC =
      new KvStoreSpec(new KvLayout(2, 4, 16, 4, 16), 1 << 20, "t");

  private static BackendContext context(Map<String, String> properties) {
    return new BackendContext(0, properties, TimeSource.SYSTEM, BackendMetrics.NOOP);
  }

  @Test
  void refusesAnUnknownKeyABadProbabilityAndItselfAsDelegate() {
    FaultyKvStoreProvider provider = new FaultyKvStoreProvider();
    assertThat(provider.name()).isEqualTo("faulty");
    assertThat(provider.configNamespace()).isEqualTo("faulty");
    assertThatThrownBy(() -> provider.open(SPEC, context(Map.of("faulty.probability", "1.5"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("faulty.probability='1.5' must be a number between 0 and 1");
    assertThatThrownBy(
            () -> provider.open(SPEC, context(Map.of("faulty.throw-probability", "often"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("faulty.throw-probability='often'");
    assertThatThrownBy(
            () -> provider.open(SPEC, context(Map.of("faulty.flip-probability", "-0.1"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("faulty.flip-probability='-0.1' must be a number between 0 and 1");
    assertThatThrownBy(() -> provider.open(SPEC, context(Map.of("faulty.seed", "x"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("faulty.seed='x' must be an integer");
    assertThatThrownBy(() -> provider.open(SPEC, context(Map.of("faulty.slow-delay", "5 min"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("faulty.slow-delay");
    assertThatThrownBy(() -> provider.open(SPEC, context(Map.of("faulty.delegate", "faulty"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must name another store");
  }

  @Test
  void namesAMissingDelegate() {
    // The asserting module's tests have no store on their path: the delegate is not found.
    assertThatThrownBy(
            () ->
                new FaultyKvStoreProvider()
                    .open(SPEC, context(Map.of("faulty.delegate", "no-such-store"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("faulty.delegate=no-such-store")
        .hasMessageContaining("no KvStoreProvider named 'no-such-store'");
  }

  @Test
  void throwsEveryCallAtThrowProbabilityOneAndCountsIt() {
    Counting metrics = new Counting();
    KvStore store = new FaultyKvStore(new Fake(), 3, 0, 1, metrics);
    List<PageKey> keys = List.of(new PageKey(1, 2, 3, 4));
    assertThatThrownBy(() -> store.existsPrefix(keys))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("injected failure of L3 existsPrefix");
    assertThat(metrics.counts).containsEntry("store.faulty.thrown", 1L);
    // At 0 nothing throws, and nothing is dropped.
    KvStore calm = new FaultyKvStore(new Fake(), 3, 0, 0, metrics);
    assertThat(calm.put(keys, null, new int[] {0})).isEqualTo(1);
    assertThat(calm.existsPrefix(keys)).isEqualTo(1);
    assertThatThrownBy(() -> new FaultyKvStore(new Fake(), 3, 0, 2, metrics))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("throwProbability=2.0");
  }

  @Test
  void countsThePagesAPutDropsAndTheGetsCutShort() {
    Counting metrics = new Counting();
    Fake fake = new Fake();
    KvStore store = new FaultyKvStore(fake, 3, 1, 0, metrics);
    List<PageKey> keys = List.of(new PageKey(1, 2, 3, 4), new PageKey(5, 6, 7, 8));
    assertThat(store.put(keys, null, new int[] {0, 1})).isZero();
    assertThat(fake.stored).isEmpty();
    assertThat(metrics.counts).containsEntry("store.faulty.dropped", 2L);
    assertThat(store.get(keys, null, new int[] {0, 1})).isZero();
    assertThat(metrics.counts).containsEntry("store.faulty.failed", 1L);
  }

  @Test
  void theSlowStoreDelegatesEveryCall() {
    Fake fake = new Fake();
    KvStore slow = new SlowKvStore(fake, Duration.ofNanos(1000));
    List<PageKey> keys = List.of(new PageKey(1, 2, 3, 4));
    assertThat(slow.put(keys, null, new int[] {0})).isEqualTo(1);
    assertThat(slow.existsPrefix(keys)).isEqualTo(1);
    assertThat(slow.get(keys, null, new int[] {0})).isEqualTo(1);
    assertThat(slow.stats().puts()).isEqualTo(1);
    slow.close();
    assertThat(fake.closed).isTrue();
    assertThatThrownBy(() -> new SlowKvStore(fake, Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be negative");
  }

  /** A store of keys without bytes. */
  private static final class Fake implements KvStore {
    final List<PageKey> stored = new ArrayList<>();
    boolean closed;

    @Override
    public int existsPrefix(List<PageKey> keys) {
      int n = 0;
      while (n < keys.size() && stored.contains(keys.get(n))) {
        n++;
      }
      return n;
    }

    @Override
    public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
      return existsPrefix(keys);
    }

    @Override
    public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
      stored.addAll(keys);
      return existsPrefix(keys);
    }

    @Override
    public KvStoreStats stats() {
      return new KvStoreStats(0, 0, 0, stored.size(), 0, 0);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private static final class Counting implements BackendMetrics {
    final Map<String, Long> counts = new ConcurrentHashMap<>();

    @Override
    public void increment(String name, long delta) {
      counts.merge(name, delta, Long::sum);
    }

    @Override
    public void recordNanos(String name, long nanos) {}
  }
}
