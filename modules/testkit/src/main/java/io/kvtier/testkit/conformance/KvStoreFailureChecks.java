package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.PoolSpec;
import io.kvtier.testkit.TestSeeds;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The checks of {@link KvStoreConformanceSuite} about limits and failures: capacity and eviction,
 * reads under eviction pressure, damaged pages, close, and bad arguments. Subclass {@link
 * KvStoreConformanceSuite}, not this.
 */
public abstract class KvStoreFailureChecks extends KvStoreSuiteBase {

  /** For subclasses. */
  protected KvStoreFailureChecks() {}

  /**
   * Storing more than the capacity evicts: after every put the bytes stored stay within the
   * capacity (which here is not a whole number of pages), what {@code put} returns is what is
   * present, and every page added is present or counted as evicted. Pages that stay read back
   * whole.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void storingBeyondTheCapacityEvicts(Random random) {
    long capacity = 4 * pageBytes() + pageBytes() / 2;
    KvStore store = open(spec(capacity));
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    List<PageKey> keys = StorePages.keys(20, random);
    for (int i = 0; i < 12; i++) {
      List<PageKey> one = List.of(keys.get(i));
      int returned = putAll(store, host, one, 0);
      assertThat(returned)
          .as("put #%d returns whether the page is present", i)
          .isEqualTo(store.existsPrefix(one));
      assertCapacityAccounting(store, keys, capacity, "after put #" + i);
    }
    List<PageKey> batch = keys.subList(12, 20);
    int returned = putAll(store, host, batch, 0);
    assertThat(returned).as("a batch of 8 into a store of 4").isEqualTo(store.existsPrefix(batch));
    KvStoreStats stats = assertCapacityAccounting(store, keys, capacity, "after the batch");
    assertThat(stats.evictions()).as("20 pages into 4").isGreaterThanOrEqualTo(16);
    int checked = 0;
    for (PageKey key : keys) {
      if (store.existsPrefix(List.of(key)) == 1) {
        StorePages.scribble(host, 8);
        assertThat(store.get(List.of(key), host, new int[] {8})).isEqualTo(1);
        assertThat(StorePages.holds(host, 8, key, 0)).as("a page that stayed").isTrue();
        checked++;
      }
    }
    assertThat(checked).as("a full store keeps some pages").isPositive();
  }

  private KvStoreStats assertCapacityAccounting(
      KvStore store, List<PageKey> keys, long capacity, String when) {
    KvStoreStats stats = store.stats();
    int present = present(store, keys);
    assertThat(stats.bytesStored())
        .as("bytesStored %s", when)
        .isLessThanOrEqualTo(capacity)
        .isEqualTo(present * pageBytes());
    assertThat(stats.puts() - stats.evictions())
        .as("pages added minus pages evicted %s (%s)", when, stats)
        .isEqualTo(present);
    return stats;
  }

  /**
   * Readers running while writers force evictions only ever get whole pages of the keys they
   * asked for: eviction never frees or reuses memory a reader is copying from.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  @Timeout(120)
  public void readersGetWholePagesUnderEvictionPressure(Random random) throws Exception {
    int capacityPages = 6;
    KvStore store = openPages(capacityPages);
    List<PageKey> universe = StorePages.keys(24, random);
    StoreStress stress = new StoreStress(store, universe, TestSeeds.scaled(150));
    HostMemory[] hosts = new HostMemory[4];
    for (int t = 0; t < hosts.length; t++) {
      hosts[t] = host(new PoolSpec(layout(), 4, MemoryLayout.PAGE_FIRST));
    }
    stress.run(hosts, random.nextLong());
    assertThat(stress.failures()).as("what readers and writers saw").isEmpty();
    store.stats();
    int present = present(store, universe);
    KvStoreStats stats = store.stats();
    assertThat(stats.hits() + stats.misses())
        .as("pages asked for by get")
        .isEqualTo(stress.pagesAsked());
    assertThat(stats.bytesStored())
        .isLessThanOrEqualTo(capacityPages * pageBytes())
        .isEqualTo(present * pageBytes());
    assertThat(stats.puts() - stats.evictions())
        .as("added minus evicted (%s)", stats)
        .isEqualTo(present);
  }

  /**
   * A damaged page is a counted miss, never data: {@code get} stops before it, the store forgets
   * it, and a put of it again works.
   *
   * @param damage what is done to the page
   * @param random seeded by the test's seed
   * @throws Exception if damaging fails
   */
  @ParameterizedTest
  @EnumSource(KvStoreDamage.class)
  public void aDamagedPageIsACountedMissNeverData(KvStoreDamage damage, Random random)
      throws Exception {
    DeviceSuiteBase.skipUnless(
        has(KvStoreCapability.DAMAGEABLE),
        "store provider '"
            + provider().name()
            + "' does not declare DAMAGEABLE: damage cannot be injected");
    var spec = spec(16 * pageBytes());
    KvStore store = open(spec);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    List<PageKey> keys = StorePages.keys(3, random);
    assertThat(putAll(store, host, keys, 0)).isEqualTo(3);
    damage(spec, context(), keys.get(1), damage, random);
    assertThat(store.get(keys, host, StorePages.run(8, 3)))
        .as("get past a %s page", damage)
        .isEqualTo(1);
    assertThat(StorePages.holds(host, 8, keys.get(0), 0)).isTrue();
    KvStoreStats stats = store.stats();
    assertThat(stats.corrupt())
        .as("corrupt after a %s page", damage)
        .isEqualTo(damage.countsAsCorrupt() ? 1 : 0);
    assertThat(stats.hits()).isEqualTo(1);
    assertThat(stats.misses()).isEqualTo(2);
    assertThat(store.existsPrefix(keys)).as("the bad page is forgotten").isEqualTo(1);
    assertThat(stats.bytesStored()).as("the bad page holds no capacity").isEqualTo(2 * pageBytes());
    assertThat(store.get(keys.subList(1, 2), host, new int[] {9})).isZero();
    assertThat(store.stats().corrupt())
        .as("found once, then it is gone")
        .isEqualTo(stats.corrupt());
    assertThat(putAll(store, host, keys, 0)).as("stored again").isEqualTo(3);
    assertThat(store.get(keys, host, StorePages.run(8, 3))).isEqualTo(3);
    assertThat(StorePages.holds(host, 9, keys.get(1), 0)).isTrue();
  }

  /** Close is idempotent; every later operation throws {@link IllegalStateException}. */
  @Test
  public void closedStoreThrowsIllegalState() {
    KvStore store = openPages(4);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    List<PageKey> keys = StorePages.keys(1, new Random(3));
    putAll(store, host, keys, 0);
    store.close();
    store.close();
    assertThatThrownBy(() -> store.existsPrefix(keys))
        .as("existsPrefix after close")
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> store.get(keys, host, new int[] {8}))
        .as("get after close")
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> store.put(keys, host, new int[] {0}))
        .as("put after close")
        .isInstanceOf(IllegalStateException.class);
  }

  /**
   * Bad arguments throw before the store does anything: nothing is stored, loaded or counted.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void badArgumentsAreRejectedBeforeAnythingHappens(Random random) {
    KvStore store = openPages(8);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    List<PageKey> keys = StorePages.keys(5, random);
    for (int i = 0; i < 5; i++) {
      StorePages.fill(host, i, keys.get(i), 0);
    }
    assertThatThrownBy(() -> store.put(keys, host, StorePages.run(0, 3)))
        .as("put of 5 keys and 3 host pages")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("5")
        .hasMessageContaining("3");
    assertThatThrownBy(() -> store.get(keys, host, StorePages.run(0, 7)))
        .as("get of 5 keys and 7 host pages")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("5")
        .hasMessageContaining("7");
    int beyond = HOST_PAGES + 7;
    assertThatThrownBy(() -> store.put(keys, host, new int[] {0, 1, 2, 3, beyond}))
        .as("a host page past the pool's end, last in the batch")
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining(String.valueOf(beyond));
    assertThatThrownBy(() -> store.get(keys, host, new int[] {0, -3, 1, 2, 4}))
        .as("a negative host page")
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("-3");
    KvLayout otherLayout =
        new KvLayout(
            layout().layers() + 1,
            layout().kvHeads(),
            layout().headDim(),
            layout().dtypeBytes(),
            layout().pageSize());
    HostMemory other = host(new PoolSpec(otherLayout, HOST_PAGES, MemoryLayout.PAGE_FIRST));
    assertThatThrownBy(() -> store.put(keys, other, StorePages.run(0, 5)))
        .as("a host pool of another layout")
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> store.put(null, host, new int[0]))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> store.get(keys, null, StorePages.run(0, 5)))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> store.put(keys, host, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> store.existsPrefix(Arrays.asList(keys.get(0), null)))
        .isInstanceOf(NullPointerException.class);
    assertThat(store.existsPrefix(keys)).as("nothing stored by a rejected put").isZero();
    assertThat(store.stats()).isEqualTo(new KvStoreStats(0, 0, 0, 0, 0, 0));
  }
}
