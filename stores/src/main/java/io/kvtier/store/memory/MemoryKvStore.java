package io.kvtier.store.memory;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.PageKey;
import io.kvtier.store.internal.AbstractKvStore;
import io.kvtier.store.internal.StoreArguments;
import io.kvtier.store.internal.StoreCounters;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * The {@code memory} store.
 *
 * <p>Design: a Caffeine cache from key to {@link MemoryPage}, weighed in bytes (each page weighs
 * {@code pageBytes}) with {@code maximumWeight = capacityBytes}, so Caffeine's policy decides what
 * to evict. Page bytes live off-heap in segments of a {@link MemorySlab}. A reader pins the page
 * for the duration of its copy; the removal listener drops the cache's reference; whoever drops
 * the last reference recycles the segment. So eviction under a reader defers the free instead of
 * racing it, and the reader's bytes are the page's bytes. Caffeine's maintenance runs on the
 * calling thread ({@code executor(Runnable::run)}): evictions, their counts and the recycling
 * are done when {@code put} returns, which keeps memory and {@link #stats()} exact without a
 * background pool.
 *
 * <p>Every page carries a CRC32C of its bytes, taken over the host page on the put's thread (the
 * copy path) just before the copy; a get checks the bytes it copied into the host page against
 * it, so damage at rest (or a host page changed under the put) is a miss counted as {@code
 * corrupt}, and the page is dropped, never returned as data.
 *
 * <p>A put of a key that is present is skipped: a key is the hash of the page's tokens, so the
 * stored bytes are already the right ones.
 */
final class MemoryKvStore extends AbstractKvStore {

  private final int pageBytes;
  private final long blockBytes;
  private final MemorySlab slab;
  private final Cache<PageKey, MemoryPage> cache;
  private final AtomicLong storedBytes = new AtomicLong();

  MemoryKvStore(KvStoreSpec spec, BackendMetrics metrics) {
    super(
        spec.layout(),
        new StoreCounters(metrics, "store.memory"),
        "memory store '" + spec.namespace() + "'");
    this.pageBytes = StoreArguments.pageBytesAsInt("memory", layout);
    this.blockBytes = layout.pageBytesPerLayer();
    this.slab = new MemorySlab(pageBytes);
    int weight = pageBytes;
    StoreCounters counted = counters;
    AtomicLong stored = storedBytes;
    this.cache =
        Caffeine.newBuilder()
            .maximumWeight(spec.capacityBytes())
            .weigher((PageKey key, MemoryPage page) -> weight)
            .executor(Runnable::run)
            .removalListener(
                (PageKey key, MemoryPage page, RemovalCause cause) -> {
                  if (cause.wasEvicted()) {
                    counted.evictions(1);
                  }
                  stored.addAndGet(-weight);
                  page.release();
                })
            .build();
  }

  @Override
  protected boolean exists(PageKey key) {
    return present(key);
  }

  @Override
  protected boolean read(PageKey key, HostMemory host, int hostPage) {
    return copyOut(key, host, hostPage);
  }

  @Override
  protected Written write(PageKey key, HostMemory host, int hostPage) {
    return copyIn(key, host, hostPage) ? Written.NEW : Written.PRESENT;
  }

  @Override
  protected boolean flip(PageKey key, long bit) {
    MemoryPage page = cache.policy().getIfPresentQuietly(key);
    if (page == null || !page.pin()) {
      return false;
    }
    try {
      long at = Math.floorMod(bit, 8L * pageBytes);
      MemorySegment data = page.data();
      byte b = data.get(ValueLayout.JAVA_BYTE, at / 8);
      data.set(ValueLayout.JAVA_BYTE, at / 8, (byte) (b ^ (1 << (int) (at % 8))));
      return true;
    } finally {
      page.release();
    }
  }

  @Override
  protected boolean holds(PageKey key) {
    return present(key);
  }

  @Override
  protected long bytesStored() {
    return storedBytes.get();
  }

  /** Runs Caffeine's pending maintenance: evictions, their counts and the recycling. */
  @Override
  protected void settle() {
    cache.cleanUp();
  }

  /** Frees every page; the counters stay readable through {@link #stats()}. */
  @Override
  protected void release() {
    cache.invalidateAll();
    cache.cleanUp();
    slab.close();
  }

  /** The slab, for tests that check when segments are recycled. */
  MemorySlab slab() {
    return slab;
  }

  /** The cache, for tests that pin a stored page by hand. */
  Cache<PageKey, MemoryPage> cache() {
    return cache;
  }

  private boolean present(PageKey key) {
    // containsKey, not getIfPresent: asking whether a page is there is not a use of it, and must
    // not make it look hot to the eviction policy.
    return cache.asMap().containsKey(key);
  }

  private boolean copyOut(PageKey key, HostMemory host, int hostPage) {
    MemoryPage page = cache.getIfPresent(key);
    if (page == null || !page.pin()) {
      return false;
    }
    CRC32C crc = new CRC32C();
    try {
      MemorySegment data = page.data();
      for (int layer = 0; layer < layout.layers(); layer++) {
        MemorySegment block = host.block(hostPage, layer);
        MemorySegment.copy(data, layer * blockBytes, block, 0, blockBytes);
        crc.update(block.asSlice(0, blockBytes).asByteBuffer());
      }
    } finally {
      page.release();
    }
    if ((int) crc.getValue() != page.crc()) {
      // Damaged at rest: counted, dropped (a later put stores it afresh), and a miss.
      counters.corrupt(1);
      cache.asMap().remove(key, page);
      return false;
    }
    return true;
  }

  /** Stores one page unless its key is present; true if this call stored it. */
  private boolean copyIn(PageKey key, HostMemory host, int hostPage) {
    if (cache.getIfPresent(key) != null) {
      return false;
    }
    MemorySegment data = slab.take();
    CRC32C crc = new CRC32C();
    for (int layer = 0; layer < layout.layers(); layer++) {
      MemorySegment block = host.block(hostPage, layer);
      // The checksum is of the host bytes, taken before they are copied: if the engine changed
      // the host page in between (it must not), the stored page fails its check at get.
      crc.update(block.asSlice(0, blockBytes).asByteBuffer());
      MemorySegment.copy(block, 0, data, layer * blockBytes, blockBytes);
    }
    MemoryPage fresh = new MemoryPage(data, slab, (int) crc.getValue());
    // Count before inserting: the insertion may evict this very page at once, and its removal
    // must not drive the byte count below what is stored.
    storedBytes.addAndGet(pageBytes);
    if (cache.asMap().putIfAbsent(key, fresh) != null) {
      storedBytes.addAndGet(-pageBytes);
      fresh.release();
      return false;
    }
    return true;
  }
}
