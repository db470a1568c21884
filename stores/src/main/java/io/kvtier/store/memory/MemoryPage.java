package io.kvtier.store.memory;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One stored page and its reference count. The cache holds one reference from insertion until
 * the page is removed (evicted, replaced or invalidated); each reader holds one while it copies.
 * The segment goes back to the slab when the last reference is released, so eviction never
 * frees, and a later put never overwrites, a segment that a reader is copying.
 *
 * <p>The page carries the CRC32C of its bytes, taken from the host page on the put's thread
 * before the copy ({@link MemoryKvStore}); a read checks the bytes it copied out against it.
 *
 * <p>The count lives on this object, not on the segment: once it reaches zero it stays zero, so
 * a reader holding a stale {@code MemoryPage} whose segment was recycled fails to {@link #pin()}
 * and reports a miss instead of reading another page's bytes.
 */
final class MemoryPage {

  private final MemorySegment data;
  private final MemorySlab slab;
  private final int crc;
  private final AtomicInteger references = new AtomicInteger(1);

  /**
   * A page holding the cache's reference; {@code data} must already hold the page's bytes.
   *
   * @param crc the CRC32C of the bytes that were to be stored
   */
  MemoryPage(MemorySegment data, MemorySlab slab, int crc) {
    this.data = data;
    this.slab = slab;
    this.crc = crc;
  }

  /** The CRC32C of the page's bytes as they were put. */
  int crc() {
    return crc;
  }

  /**
   * Takes a reader's reference.
   *
   * @return false if the page was already released by everyone (then it must not be read)
   */
  boolean pin() {
    while (true) {
      int n = references.get();
      if (n == 0) {
        return false;
      }
      if (references.compareAndSet(n, n + 1)) {
        return true;
      }
    }
  }

  /** Drops one reference; the last one recycles the segment. */
  void release() {
    int n = references.decrementAndGet();
    if (n == 0) {
      slab.recycle(data);
    } else if (n < 0) {
      throw new IllegalStateException("memory page released more often than pinned");
    }
  }

  /** The page's bytes: layer 0's block, then layer 1's, and so on. */
  MemorySegment data() {
    return data;
  }

  /** References held now (for tests). */
  int references() {
    return references.get();
  }
}
