package io.kvtier.core.cache;

/**
 * Eviction order and host eviction (CACHE.md §6, §7): takes candidates from the tier's {@link
 * EvictionHeap} in policy order. Candidacy is re-checked when a node leaves the heap, so a node
 * that was locked or gained a child since its push is skipped. Host eviction only deletes
 * host-only leaves and so needs the tree alone; device eviction may back a victim up first
 * (write-back), which may evict host leaves, so it lives with the backups ({@link
 * Backups#evictDevice}) and polls its victims here.
 */
final class Evictor {
  /** Sees each victim before it is evicted; a test hook, no-op by default. */
  interface Observer {
    /** Called with the victim of one eviction step. */
    void victim(boolean host, RadixNode node);
  }

  static final Observer NO_OBSERVER = (host, node) -> {};

  private final CacheTree tree;
  private final CacheCounters counters;

  /** Set by tests only, before the cache is used. */
  Observer observer = NO_OBSERVER;

  Evictor(CacheTree tree, CacheCounters counters) {
    this.tree = tree;
    this.counters = counters;
  }

  RadixNode pollDevice() {
    while (tree.deviceHeap.size() > 0) {
      RadixNode n = tree.deviceHeap.pollLive();
      if (n != null && CacheTree.isDeviceCandidate(n)) {
        return n;
      }
    }
    return null;
  }

  RadixNode pollHost() {
    while (tree.hostHeap.size() > 0) {
      RadixNode n = tree.hostHeap.pollLive();
      if (n != null && CacheTree.isHostCandidate(n)) {
        return n;
      }
    }
    return null;
  }

  /**
   * Frees host pages by deleting host-only leaves in policy order, and counts them.
   *
   * @param pages pages wanted
   * @return pages freed
   */
  int evictHost(int pages) {
    int freed = 0;
    while (freed < pages) {
      RadixNode victim = pollHost();
      if (victim == null) {
        break;
      }
      observer.victim(true, victim);
      freed += victim.pageCount;
      tree.delete(victim);
    }
    counters.add(CacheCounter.HOST_EVICTIONS, freed);
    return freed;
  }
}
