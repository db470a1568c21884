package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * The page allocator of one pool: a stack of free slot numbers plus an ownership bit per slot.
 *
 * <p>Deterministic: the stack starts as 0, 1, 2, ... from the top and freed slots are pushed in
 * the order given, so the same sequence of calls returns the same slots on every rank. The
 * ownership bits make a double free fail at once instead of handing one slot to two owners.
 */
final class PageAllocator {
  private final String pool;
  private final int capacity;
  private final int[] stack;
  private int free;
  private final long[] used;

  /**
   * A pool with every slot free.
   *
   * @param pool the pool's name for messages, for example {@code device}
   * @param capacity number of slots, at least 0
   */
  PageAllocator(String pool, int capacity) {
    this.pool = pool;
    this.capacity = capacity;
    this.stack = new int[capacity];
    for (int i = 0; i < capacity; i++) {
      stack[i] = capacity - 1 - i;
    }
    this.free = capacity;
    this.used = new long[(capacity + 63) >>> 6];
  }

  int capacity() {
    return capacity;
  }

  int free() {
    return free;
  }

  /**
   * Takes {@code n} slots into {@code dst[off..off+n)}. The caller checks {@link #free()} first.
   *
   * @throws IllegalStateException if fewer than {@code n} slots are free
   */
  void allocate(int n, int[] dst, int off) {
    if (n > free) {
      throw new IllegalStateException(
          pool + " allocator: requested " + n + " pages but only " + free + " are free");
    }
    for (int i = 0; i < n; i++) {
      int slot = stack[--free];
      used[slot >>> 6] |= 1L << slot;
      dst[off + i] = slot;
    }
  }

  /**
   * Returns {@code n} slots from {@code src[off..off+n)}.
   *
   * @throws IllegalStateException if a slot is out of range or not allocated (a double free)
   */
  void release(int[] src, int off, int n) {
    for (int i = 0; i < n; i++) {
      int slot = src[off + i];
      if (slot < 0 || slot >= capacity || (used[slot >>> 6] & (1L << slot)) == 0) {
        throw new IllegalStateException(
            pool + " slot " + slot + " released but not allocated (double free or foreign slot;"
                + " capacity=" + capacity + "): this is an engine bug, please report it");
      }
      used[slot >>> 6] &= ~(1L << slot);
      stack[free++] = slot;
    }
  }

  boolean isAllocated(int slot) {
    return (used[slot >>> 6] & (1L << slot)) != 0;
  }

  /** The free slots, for the invariant checker. */
  int[] freeSlots() {
    return Arrays.copyOf(stack, free);
  }
}
