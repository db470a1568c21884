package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance suite of a {@link io.kvtier.spi.KvStoreProvider}. A store module runs it with a
 * subclass:
 *
 * <pre>{@code
 * class MemoryKvStoreConformanceTest extends KvStoreConformanceSuite {
 *   protected KvStoreProvider provider() { return new MemoryKvStoreProvider(); }
 * }
 * }</pre>
 *
 * <p>A store that keeps data outside the JVM overrides {@link #context()} to say where (a
 * directory, a cluster), declares its {@link KvStoreCapability capabilities}, and implements
 * {@link #damage} if it declares {@link KvStoreCapability#DAMAGEABLE}. Pages move through host
 * pools of {@link #hostProvider()}, the {@code sim} pool unless overridden.
 *
 * <p>The counters' contract the suite holds every store to: {@code get} of {@code k} keys that
 * returns {@code n} adds {@code n} hits and {@code k - n} misses; {@code puts} counts pages a put
 * added to the store (a put of a present key may add 0 or 1); every page added is either still
 * present or counted in {@code evictions} (or was dropped as damaged); {@code bytesStored} is
 * {@code pageBytes} times the pages present and never exceeds the capacity. {@code stats()} after
 * {@code close()} is not checked.
 *
 * <p>The main checks are here, the capacity, damage, concurrency, close and argument checks in
 * {@link KvStoreFailureChecks}, the hooks in {@link KvStoreSuiteBase}.
 */
public abstract class KvStoreConformanceSuite extends KvStoreFailureChecks {

  /** For subclasses. */
  protected KvStoreConformanceSuite() {}

  /** The provider's {@code name()} equals its {@link io.kvtier.spi.ProviderName}. */
  @Test
  public void providerNamesItselfAsAnnotated() {
    ProviderChecks.assertNamedAsAnnotated(provider());
  }

  /** A property of the provider's namespace that it does not know is rejected, naming the key. */
  @Test
  public void unknownPropertyIsRejected() {
    String key = provider().configNamespace() + ".conformance-no-such-key";
    BackendContext base = context();
    Map<String, String> properties = new HashMap<>(base.properties());
    properties.put(key, "1");
    BackendContext bad = new BackendContext(base.rank(), properties, base.time(), base.metrics());
    assertThatThrownBy(() -> provider().open(spec(4 * pageBytes()), bad).close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key);
  }

  /** A new store holds nothing, counts nothing, and takes empty batches. */
  @Test
  public void newStoreIsEmpty() {
    KvStore store = openPages(8);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    assertThat(store.stats()).isEqualTo(new KvStoreStats(0, 0, 0, 0, 0, 0));
    assertThat(store.existsPrefix(List.of())).isZero();
    assertThat(store.get(List.of(), host, new int[0])).isZero();
    assertThat(store.put(List.of(), host, new int[0])).isZero();
    assertThat(store.existsPrefix(StorePages.keys(3, new Random(1)))).isZero();
    assertThat(store.stats())
        .as("empty batches and existsPrefix count nothing")
        .isEqualTo(new KvStoreStats(0, 0, 0, 0, 0, 0));
  }

  /**
   * Pages put from scattered host pages of one pool come back byte for byte into other scattered
   * pages of a pool of the other block order, and the counters say so.
   *
   * @param memoryLayout the block order of the source pool
   * @param random seeded by the test's seed
   */
  @ParameterizedTest
  @EnumSource(MemoryLayout.class)
  public void putThenGetRoundTrip(MemoryLayout memoryLayout, Random random) {
    KvStore store = openPages(32);
    HostMemory source = host(memoryLayout);
    HostMemory target =
        host(
            memoryLayout == MemoryLayout.PAGE_FIRST
                ? MemoryLayout.LAYER_FIRST
                : MemoryLayout.PAGE_FIRST);
    int n = 8;
    List<PageKey> keys = StorePages.keys(n, random);
    int[] from = shuffledPages(random);
    int[] to = shuffledPages(random);
    for (int i = 0; i < n; i++) {
      StorePages.fill(source, from[i], keys.get(i), 0);
      StorePages.scribble(target, to[i]);
    }
    assertThat(store.put(keys, source, Arrays.copyOf(from, n)))
        .as("put() returns the present prefix")
        .isEqualTo(n);
    assertThat(store.existsPrefix(keys)).isEqualTo(n);
    assertThat(store.get(keys, target, Arrays.copyOf(to, n))).isEqualTo(n);
    for (int i = 0; i < n; i++) {
      assertThat(StorePages.holds(target, to[i], keys.get(i), 0))
          .as("page %d (host page %d -> store -> host page %d)", i, from[i], to[i])
          .isTrue();
    }
    assertThat(store.stats()).isEqualTo(new KvStoreStats(n, 0, 0, n, 0, n * pageBytes()));
  }

  /**
   * {@code existsPrefix} counts present keys from the first and stops at the first absent one,
   * without counting hits or misses.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void existsPrefixStopsAtTheFirstGap(Random random) {
    KvStore store = openPages(16);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    List<PageKey> keys = StorePages.keys(6, random);
    int gap = 1 + random.nextInt(4);
    List<PageKey> stored = new ArrayList<>(keys);
    stored.remove(gap);
    assertThat(putAll(store, host, stored, 0)).isEqualTo(5);
    assertThat(store.existsPrefix(keys)).as("keys with a gap at %d", gap).isEqualTo(gap);
    assertThat(store.existsPrefix(keys.subList(gap, 6))).as("starting at the gap").isZero();
    assertThat(store.existsPrefix(keys.subList(gap + 1, 6))).isEqualTo(5 - gap);
    List<PageKey> reversed = new ArrayList<>(stored);
    Collections.reverse(reversed);
    assertThat(store.existsPrefix(reversed)).as("order is the caller's").isEqualTo(5);
    KvStoreStats stats = store.stats();
    assertThat(stats.hits() + stats.misses()).as("existsPrefix is not a get").isZero();
  }

  /**
   * {@code get} loads pages in order up to the first absent one, returns how many, and counts
   * the rest as misses.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void getStopsAtTheFirstAbsentPage(Random random) {
    KvStore store = openPages(16);
    HostMemory host = host(MemoryLayout.LAYER_FIRST);
    List<PageKey> keys = StorePages.keys(6, random);
    int gap = 1 + random.nextInt(4);
    List<PageKey> stored = new ArrayList<>(keys);
    stored.remove(gap);
    putAll(store, host, stored, 0);
    int[] to = StorePages.run(8, 6);
    for (int page : to) {
      StorePages.scribble(host, page);
    }
    assertThat(store.get(keys, host, to)).as("get with a gap at %d", gap).isEqualTo(gap);
    for (int i = 0; i < gap; i++) {
      assertThat(StorePages.holds(host, to[i], keys.get(i), 0)).as("page %d", i).isTrue();
    }
    assertThat(store.get(keys.subList(gap, 6), host, StorePages.run(8, 6 - gap))).isZero();
    KvStoreStats stats = store.stats();
    assertThat(stats.hits()).isEqualTo(gap);
    assertThat(stats.misses())
        .as("every page asked for and not returned")
        .isEqualTo((6 - gap) + (6 - gap));
  }

  /**
   * Putting a present key again is allowed; the page then reads back as one of the two versions,
   * whole, and takes one page of the capacity.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void aPresentKeyMayBePutAgain(Random random) {
    KvStore store = openPages(8);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    List<PageKey> keys = StorePages.keys(3, random);
    assertThat(putAll(store, host, keys.subList(0, 2), 0)).isEqualTo(2);
    List<PageKey> again = List.of(keys.get(0), keys.get(2));
    assertThat(putAll(store, host, again, 1)).as("a present key, then a new one").isEqualTo(2);
    StorePages.scribble(host, 8);
    assertThat(store.get(List.of(keys.get(0)), host, new int[] {8})).isEqualTo(1);
    assertThat(
            StorePages.holds(host, 8, keys.get(0), 0) || StorePages.holds(host, 8, keys.get(0), 1))
        .as("the page put twice reads back as one whole version")
        .isTrue();
    KvStoreStats stats = store.stats();
    assertThat(stats.puts()).isBetween(3L, 4L);
    assertThat(stats.bytesStored()).isEqualTo(3 * pageBytes());
  }

  /**
   * A store opened after another was closed finds the first one's pages if and only if the
   * provider declares {@link KvStoreCapability#PERSISTENT}; reopened with less capacity, it
   * keeps no more than fits.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void pagesOutliveTheStoreOnlyIfPersistent(Random random) {
    List<PageKey> keys = StorePages.keys(5, random);
    HostMemory host = host(MemoryLayout.PAGE_FIRST);
    KvStoreSpec spec = spec(16 * pageBytes());
    KvStore first = open(spec);
    assertThat(putAll(first, host, keys, 0)).isEqualTo(5);
    first.close();
    KvStore second = open(spec);
    if (!has(KvStoreCapability.PERSISTENT)) {
      assertThat(second.existsPrefix(keys)).as("not PERSISTENT: a new store is empty").isZero();
      assertThat(second.stats().bytesStored()).isZero();
      return;
    }
    assertThat(second.existsPrefix(keys)).as("PERSISTENT: the pages are there").isEqualTo(5);
    assertThat(second.stats().bytesStored()).isEqualTo(5 * pageBytes());
    assertThat(second.get(keys, host, StorePages.run(8, 5))).isEqualTo(5);
    for (int i = 0; i < 5; i++) {
      assertThat(StorePages.holds(host, 8 + i, keys.get(i), 0)).as("page %d", i).isTrue();
    }
    second.close();
    KvStore smaller = open(spec(2 * pageBytes()));
    int kept = present(smaller, keys);
    assertThat(kept).as("pages kept by a store of two pages").isBetween(0, 2);
    assertThat(smaller.stats().bytesStored()).isEqualTo(kept * pageBytes());
  }

  /**
   * Two stores open at once on the same spec and context see each other's pages if and only if
   * the provider declares {@link KvStoreCapability#SHARED}.
   *
   * @param random seeded by the test's seed
   */
  @Test
  public void storesSeeEachOthersPagesOnlyIfShared(Random random) {
    List<PageKey> keys = StorePages.keys(5, random);
    HostMemory host = host(MemoryLayout.LAYER_FIRST);
    KvStoreSpec spec = spec(16 * pageBytes());
    KvStore writer = open(spec);
    KvStore reader = open(spec);
    assertThat(putAll(writer, host, keys.subList(0, 3), 0)).isEqualTo(3);
    if (!has(KvStoreCapability.SHARED)) {
      assertThat(reader.existsPrefix(keys)).as("not SHARED: another store's pages").isZero();
      assertThat(reader.get(keys, host, StorePages.run(8, 5))).isZero();
      return;
    }
    assertThat(reader.existsPrefix(keys)).as("SHARED: the writer's pages").isEqualTo(3);
    assertThat(reader.get(keys.subList(0, 3), host, StorePages.run(8, 3))).isEqualTo(3);
    for (int i = 0; i < 3; i++) {
      assertThat(StorePages.holds(host, 8 + i, keys.get(i), 0)).as("page %d", i).isTrue();
    }
    assertThat(putAll(reader, host, keys, 0)).isEqualTo(5);
    assertThat(writer.existsPrefix(keys)).as("and the other way").isEqualTo(5);
  }

  private static int[] shuffledPages(Random random) {
    List<Integer> pages = new ArrayList<>();
    for (int p = 0; p < HOST_PAGES; p++) {
      pages.add(p);
    }
    Collections.shuffle(pages, random);
    return pages.stream().mapToInt(Integer::intValue).toArray();
  }
}
