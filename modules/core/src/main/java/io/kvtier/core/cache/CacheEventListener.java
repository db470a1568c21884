package io.kvtier.core.cache;

/**
 * Receives what a rank's cache stores and removes, per medium, in page-sized blocks: the KV
 * events that routers across data-parallel replicas learn from (ARCHITECTURE.md, "KV events").
 *
 * <p>The cache calls it at its replicated decisions only (insert, load-back, host commit,
 * eviction, L3 write commit, L3 prefetch insert), on the scheduler thread, in the order it
 * decides; so every rank of a group would report the same stream, and one rank (rank 0) is
 * enough to publish it. A listener must return quickly and never call back into the cache: a
 * publisher hands the event to its own thread. A split of a node changes no block and is not
 * reported.
 *
 * <p>With {@link #NONE}, the default, the cache computes nothing for events.
 */
public interface CacheEventListener {
  /** Receives nothing; the cache skips the hashing too. */
  CacheEventListener NONE = event -> {};

  /**
   * One change, in the order the cache decided it.
   *
   * @param event what was stored or removed
   */
  void onEvent(CacheEvent event);
}
