package io.kvtier.store.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Page-sized off-heap segments from one shared {@link Arena}, recycled through a free list.
 *
 * <p>Every stored page has the same size, so a freed segment fits the next page exactly: reusing
 * it avoids a {@code malloc}/{@code free} (and, with one arena per page, the thread handshake of
 * closing a shared arena) per put and eviction. The slab grows only when the free list is empty,
 * so its size is the peak of pages held at once: the cache's capacity plus pages in flight (being
 * written, or evicted while a reader still copies them). The memory goes back to the system at
 * {@link #close()}.
 */
final class MemorySlab {

  private final Arena arena = Arena.ofShared();
  private final long pageBytes;
  // LIFO, so that the most recently freed (cache-warm) segment is reused first.
  private final ConcurrentLinkedDeque<MemorySegment> free = new ConcurrentLinkedDeque<>();
  private final AtomicLong allocated = new AtomicLong();
  private volatile boolean closed;

  MemorySlab(long pageBytes) {
    this.pageBytes = pageBytes;
  }

  /** A segment of one page: recycled if one is free, else newly allocated. */
  MemorySegment take() {
    MemorySegment segment = free.pollFirst();
    if (segment != null) {
      return segment;
    }
    allocated.incrementAndGet();
    return arena.allocate(pageBytes, 64);
  }

  /** Returns a segment that nobody reads or writes any more; dropped once the slab is closed. */
  void recycle(MemorySegment segment) {
    if (!closed) {
      free.offerFirst(segment);
    }
  }

  /** Segments allocated so far, free or not. */
  long allocatedPages() {
    return allocated.get();
  }

  /** Segments on the free list now. */
  int freePages() {
    return free.size();
  }

  /** Whether a segment is on the free list (for tests: a pinned page's segment must not be). */
  boolean isFree(MemorySegment segment) {
    return free.stream().anyMatch(s -> s.address() == segment.address());
  }

  /** Frees every segment; the caller guarantees that nobody uses one any more. */
  void close() {
    closed = true;
    free.clear();
    arena.close();
  }
}
