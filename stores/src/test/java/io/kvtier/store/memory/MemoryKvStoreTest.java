package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.store.internal.TestHostMemory;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the conformance suite cannot see from outside: a page pinned by a reader keeps its memory
 * through eviction and later puts, and the slab stays as large as the peak of pages held.
 */
class MemoryKvStoreTest {

  private static final KvLayout LAYOUT = new KvLayout(2, 1, 4, 2, 2);
  private final TestHostMemory host = new TestHostMemory(LAYOUT, 8, MemoryLayout.LAYER_FIRST);

  @AfterEach
  void close() {
    host.close();
  }

  private static MemoryKvStore open(int capacityPages) {
    KvStoreSpec spec = new KvStoreSpec(LAYOUT, capacityPages * LAYOUT.pageBytes(), "unit");
    return (MemoryKvStore) new MemoryKvStoreProvider().open(spec, BackendContext.defaults());
  }

  private int put(MemoryKvStore store, PageKey key) {
    host.fill(0, key);
    return store.put(List.of(key), host, new int[] {0});
  }

  @Test
  void anEvictedPageThatAReaderPinsKeepsItsBytesUntilReleased() {
    try (MemoryKvStore store = open(1)) {
      PageKey held = TestHostMemory.keys(1, 7).getFirst();
      assertThat(put(store, held)).isEqualTo(1);
      MemoryPage page = store.cache().getIfPresent(held);
      assertThat(page.pin()).isTrue();
      MemorySegment data = page.data();
      // A store of one page: each new key evicts either the held page or itself; go on until
      // the held page is out.
      List<PageKey> pressure = TestHostMemory.keys(200, 8);
      for (PageKey other : pressure) {
        if (store.existsPrefix(List.of(held)) == 0) {
          break;
        }
        put(store, other);
      }
      assertThat(store.existsPrefix(List.of(held))).as("the held page was evicted").isZero();
      assertThat(store.stats().evictions()).isPositive();
      assertThat(store.slab().isFree(data)).as("evicted but pinned: not recycled").isFalse();
      // More puts after the eviction take other segments, never the pinned one.
      for (PageKey other : TestHostMemory.keys(5, 9)) {
        put(store, other);
      }
      assertThat(data.toArray(ValueLayout.JAVA_BYTE))
          .isEqualTo(TestHostMemory.content(held, LAYOUT));
      page.release();
      assertThat(store.slab().isFree(data)).as("the reader's release recycles it").isTrue();
      assertThat(page.pin()).isFalse();
    }
  }

  @Test
  void theSlabGrowsOnlyToThePeakOfPagesHeld() {
    try (MemoryKvStore store = open(3)) {
      for (PageKey key : TestHostMemory.keys(50, 3)) {
        put(store, key);
      }
      KvStoreStats stats = store.stats();
      assertThat(stats.bytesStored()).isLessThanOrEqualTo(3 * LAYOUT.pageBytes());
      assertThat(stats.puts() - stats.evictions())
          .isEqualTo(stats.bytesStored() / LAYOUT.pageBytes());
      // Three stored plus the one being inserted before its eviction.
      assertThat(store.slab().allocatedPages()).isLessThanOrEqualTo(4);
    }
  }

  @Test
  void closeFreesEveryPageAndKeepsTheCounters() {
    MemoryKvStore store = open(4);
    List<PageKey> keys = TestHostMemory.keys(2, 1);
    put(store, keys.get(0));
    put(store, keys.get(1));
    store.close();
    store.close();
    KvStoreStats stats = store.stats();
    assertThat(stats.puts()).isEqualTo(2);
    assertThat(stats.bytesStored()).isZero();
    assertThatThrownBy(() -> store.existsPrefix(keys))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("existsPrefix() on the memory store 'unit' after close()");
  }

  @Test
  void aPutOfAPresentKeyKeepsTheStoredBytes() {
    try (MemoryKvStore store = open(4)) {
      PageKey key = TestHostMemory.keys(1, 2).getFirst();
      put(store, key);
      host.fill(0, TestHostMemory.keys(1, 3).getFirst());
      assertThat(store.put(List.of(key), host, new int[] {0})).isEqualTo(1);
      assertThat(store.stats().puts()).isEqualTo(1);
      assertThat(store.get(List.of(key), host, new int[] {5})).isEqualTo(1);
      assertThat(host.bytes(5)).isEqualTo(TestHostMemory.content(key, LAYOUT));
    }
  }

  @Test
  void aBitFlippedAtRestIsACountedMissAndThePageIsDropped() {
    try (MemoryKvStore store = open(4)) {
      List<PageKey> keys = TestHostMemory.keys(3, 4);
      for (PageKey key : keys) {
        put(store, key);
      }
      // Every bit of the page is covered: the first, one in the second layer's block, the last.
      long[] bits = {0, 8L * LAYOUT.pageBytesPerLayer() + 5, 8L * LAYOUT.pageBytes() - 1};
      long corrupt = 0;
      for (long bit : bits) {
        assertThat(store.flipStoredBit(keys.get(1), bit)).isTrue();
        assertThat(store.get(keys, host, new int[] {4, 5, 6})).as("bit %d", bit).isEqualTo(1);
        assertThat(store.stats().corrupt()).isEqualTo(++corrupt);
        assertThat(store.existsPrefix(keys)).as("the damaged page is dropped").isEqualTo(1);
        assertThat(store.stats().bytesStored()).isEqualTo(2 * LAYOUT.pageBytes());
        put(store, keys.get(1));
        assertThat(store.get(keys, host, new int[] {4, 5, 6})).isEqualTo(3);
        assertThat(host.bytes(5)).isEqualTo(TestHostMemory.content(keys.get(1), LAYOUT));
      }
      assertThat(store.stats().misses()).isEqualTo(2L * bits.length);
      assertThat(store.flipStoredBit(TestHostMemory.keys(1, 99).getFirst(), 0))
          .as("a page the store does not hold")
          .isFalse();
    }
  }

  @Test
  void aBitFlippedTwiceIsWholeAgain() {
    try (MemoryKvStore store = open(4)) {
      PageKey key = TestHostMemory.keys(1, 5).getFirst();
      put(store, key);
      assertThat(store.flipStoredBit(key, -3)).isTrue();
      assertThat(store.flipStoredBit(key, 8L * LAYOUT.pageBytes() - 3)).isTrue();
      assertThat(store.get(List.of(key), host, new int[] {3})).isEqualTo(1);
      assertThat(store.stats().corrupt()).isZero();
    }
  }
}
