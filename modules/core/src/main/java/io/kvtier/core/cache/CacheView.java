package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import io.kvtier.spi.PageKey;
import java.util.List;
import java.util.Optional;

/**
 * Read-only access to one rank's cache, for a server that embeds a {@link
 * io.kvtier.core.rank.RankEngine} ({@code RankEngine.view()}): counts, pool usage, statistics,
 * the replica digest and lookups that neither touch nor split a node. Nothing here changes
 * replicated state, so a read on one rank cannot make the ranks diverge; every change goes
 * through the engine's steps. {@link RankCache} implements it, and {@link RankCache#readOnly()}
 * gives an instance that cannot be cast back to the cache.
 *
 * <p>Not thread-safe, like the cache: read it on the engine's thread, between steps.
 */
public interface CacheView {
  /** The settings. */
  CacheConfig config();

  /** Whether a request is active (admitted, not finished or aborted). */
  boolean isActive(long requestId);

  /** The number of active requests. */
  int activeRequests();

  /** Replicated: pending backups, loads, L3 writes and prefetches. */
  int outstandingOperations();

  /** Replicated: write acks not yet committed. */
  int pendingWrites();

  /** Replicated: load acks not yet committed. */
  int pendingLoads();

  /** Replicated: L3 writes not yet committed. */
  int pendingL3Writes();

  /** Replicated: prefetches probing, fetching or draining. */
  int pendingPrefetches();

  /** Whether this cache has an L3 tier. */
  boolean hasL3();

  /** The L3 settings, or empty without an L3 tier. */
  Optional<L3Config> l3Config();

  /** Replicated: where a request's prefetch stands. */
  RankCache.PrefetchState prefetchState(long requestId);

  /** The replicated counters of the L3 tier; {@link L3Stats#NONE} without one. */
  L3Stats l3Stats();

  /** The device pool's accounting. */
  PoolUsage deviceUsage();

  /** The host pool's accounting. */
  PoolUsage hostUsage();

  /** The logical clock. */
  long logicalClock();

  /** The number of tree nodes, roots excluded. */
  int nodeCount();

  /** The 64-bit hash of all replicated state of the cache (ARCHITECTURE.md §5). */
  long replicaDigest();

  /** The replicated counters of the cache. */
  CacheStats stats();

  /**
   * How many leading tokens of {@code tokens} (page-aligned) the tree holds in namespace {@code
   * namespace}, on any tier, without touching, splitting or locking anything: a match-free
   * lookup. Tokens outside the vocabulary simply do not match.
   */
  int cachedLength(long namespace, int[] tokens);

  /** The page keys of a page-aligned token sequence in a namespace, one per page. */
  List<PageKey> pageKeys(long namespace, int[] tokens);
}
