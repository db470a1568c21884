package io.kvtier.asserting;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DamageableKvStore;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The stored-page flips of {@link FaultyKvStore}: each flip lands in a page that the get reads at
 * once, so a store that checks counts exactly the flips injected, and one that does not check
 * returns the damaged page.
 */
class FaultyKvStoreFlipTest {

  private static List<PageKey> keys(int n, int salt) {
    List<PageKey> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      keys.add(new PageKey(salt, i, 7L * i + salt, 31L * i + 1));
    }
    return keys;
  }

  @Test
  void everyFlipIsReadAtOnceAndACheckingStoreCountsEachOne() {
    Pages store = new Pages(true);
    FaultyKvStore faulty = new FaultyKvStore(store, 42, 0, 0.2);
    List<PageKey> keys = keys(8, 1);
    int[] slots = new int[keys.size()];
    long shortReads = 0;
    for (int call = 0; call < 200; call++) {
      store.put(keys, null, slots);
      int got = faulty.get(keys, null, slots);
      if (got < keys.size()) {
        shortReads++;
      }
    }
    assertThat(faulty.flipsInjected()).isPositive();
    assertThat(store.stats().corrupt()).isEqualTo(faulty.flipsInjected());
    // A get stops at its first flipped page: one flip per short read, none in a whole one.
    assertThat(shortReads).isEqualTo(faulty.flipsInjected());
  }

  @Test
  void theFlipsAreCountedInTheMetricsTheFaultyStoreIsGiven() {
    Pages store = new Pages(false);
    Map<String, Long> counts = new ConcurrentHashMap<>();
    BackendMetrics metrics =
        new BackendMetrics() {
          @Override
          public void increment(String name, long delta) {
            counts.merge(name, delta, Long::sum);
          }

          @Override
          public void recordNanos(String name, long nanos) {}
        };
    FaultyKvStore faulty = new FaultyKvStore(store, 42, 0, 0, 1.0, metrics);
    List<PageKey> keys = keys(3, 5);
    store.put(keys, null, new int[3]);
    assertThat(faulty.get(keys, null, new int[3])).isEqualTo(3);
    assertThat(counts).containsEntry("store.faulty.flipped", 3L);
    assertThat(counts).doesNotContainKey("store.faulty.thrown");
  }

  @Test
  void aStoreThatDoesNotCheckReturnsTheFlippedPages() {
    Pages store = new Pages(false);
    FaultyKvStore faulty = new FaultyKvStore(store, 42, 0, 1.0);
    List<PageKey> keys = keys(4, 2);
    store.put(keys, null, new int[4]);
    assertThat(faulty.get(keys, null, new int[4])).isEqualTo(4);
    assertThat(faulty.flipsInjected()).isEqualTo(4);
    assertThat(store.stats().corrupt()).isZero();
    assertThat(store.damaged).hasSize(4);
  }

  @Test
  void aFlipOfAPageTheStoreLacksIsAPlainMissAndNotCounted() {
    Pages store = new Pages(true);
    FaultyKvStore faulty = new FaultyKvStore(store, 42, 0, 1.0);
    assertThat(faulty.get(keys(3, 3), null, new int[3])).isZero();
    assertThat(faulty.flipsInjected()).isZero();
  }

  @Test
  void flipsNeedADamageableStoreAndAProbability() {
    KvStore plain = new Pages(true).plain();
    assertThat(new FaultyKvStore(plain, 1, 0.1, 0).flipsInjected()).isZero();
    assertThatThrownBy(() -> new FaultyKvStore(plain, 1, 0, 0.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a DamageableKvStore");
    assertThatThrownBy(() -> new FaultyKvStore(new Pages(true), 1, 0, 1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("flipProbability=1.5");
  }

  /** Pages without bytes: a flip marks a page damaged; a checking get stops there. */
  private static final class Pages implements DamageableKvStore {
    private final boolean checks;
    private final Map<PageKey, Boolean> held = new HashMap<>();
    private final java.util.Set<PageKey> damaged = new java.util.HashSet<>();
    private long corrupt;

    Pages(boolean checks) {
      this.checks = checks;
    }

    KvStore plain() {
      Pages self = this;
      return new KvStore() {
        @Override
        public int existsPrefix(List<PageKey> keys) {
          return self.existsPrefix(keys);
        }

        @Override
        public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
          return self.get(keys, host, hostPages);
        }

        @Override
        public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
          return self.put(keys, host, hostPages);
        }

        @Override
        public KvStoreStats stats() {
          return self.stats();
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public boolean flipStoredBit(PageKey key, long bit) {
      if (!held.containsKey(key)) {
        return false;
      }
      damaged.add(key);
      return true;
    }

    @Override
    public int existsPrefix(List<PageKey> keys) {
      int n = 0;
      while (n < keys.size() && held.containsKey(keys.get(n))) {
        n++;
      }
      return n;
    }

    @Override
    public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
      int n = 0;
      while (n < keys.size() && held.containsKey(keys.get(n))) {
        if (checks && damaged.remove(keys.get(n))) {
          held.remove(keys.get(n));
          corrupt++;
          break;
        }
        n++;
      }
      return n;
    }

    @Override
    public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
      for (PageKey key : keys) {
        held.put(key, Boolean.TRUE);
      }
      return keys.size();
    }

    @Override
    public KvStoreStats stats() {
      return new KvStoreStats(0, 0, corrupt, 0, 0, 0);
    }

    @Override
    public void close() {}
  }
}
