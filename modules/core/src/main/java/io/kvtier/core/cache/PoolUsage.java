package io.kvtier.core.cache;

/**
 * The page accounting of one pool: {@code free + evictable + protectedPages == capacity}.
 *
 * @param capacity pages in the pool
 * @param free pages no one holds
 * @param evictable pages held by the tree that eviction may reclaim (unlocked, not pending)
 * @param protectedPages pages held by locks, pending copies or requests
 */
public record PoolUsage(int capacity, int free, int evictable, int protectedPages) {

  /** Validates that no count is negative. */
  public PoolUsage {
    if (capacity < 0 || free < 0 || evictable < 0 || protectedPages < 0) {
      throw new IllegalArgumentException(
          "negative page count: capacity="
              + capacity
              + " free="
              + free
              + " evictable="
              + evictable
              + " protected="
              + protectedPages);
    }
  }

  /**
   * Pages in use.
   *
   * @return {@code capacity - free}
   */
  public int used() {
    return capacity - free;
  }
}
