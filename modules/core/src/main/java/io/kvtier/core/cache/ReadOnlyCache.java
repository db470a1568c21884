package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import io.kvtier.spi.PageKey;
import java.util.List;
import java.util.Optional;

/**
 * A {@link RankCache} as a {@link CacheView} ({@link RankCache#readOnly()}): delegates the reads,
 * so that what an engine hands to the server that embeds it cannot be cast back to the cache.
 */
record ReadOnlyCache(RankCache cache) implements CacheView {
  @Override
  public CacheConfig config() {
    return cache.config();
  }

  @Override
  public boolean isActive(long requestId) {
    return cache.isActive(requestId);
  }

  @Override
  public int activeRequests() {
    return cache.activeRequests();
  }

  @Override
  public int outstandingOperations() {
    return cache.outstandingOperations();
  }

  @Override
  public int pendingWrites() {
    return cache.pendingWrites();
  }

  @Override
  public int pendingLoads() {
    return cache.pendingLoads();
  }

  @Override
  public int pendingL3Writes() {
    return cache.pendingL3Writes();
  }

  @Override
  public int pendingPrefetches() {
    return cache.pendingPrefetches();
  }

  @Override
  public boolean hasL3() {
    return cache.hasL3();
  }

  @Override
  public Optional<L3Config> l3Config() {
    return cache.l3Config();
  }

  @Override
  public RankCache.PrefetchState prefetchState(long requestId) {
    return cache.prefetchState(requestId);
  }

  @Override
  public L3Stats l3Stats() {
    return cache.l3Stats();
  }

  @Override
  public PoolUsage deviceUsage() {
    return cache.deviceUsage();
  }

  @Override
  public PoolUsage hostUsage() {
    return cache.hostUsage();
  }

  @Override
  public long logicalClock() {
    return cache.logicalClock();
  }

  @Override
  public int nodeCount() {
    return cache.nodeCount();
  }

  @Override
  public long replicaDigest() {
    return cache.replicaDigest();
  }

  @Override
  public CacheStats stats() {
    return cache.stats();
  }

  @Override
  public int cachedLength(long namespace, int[] tokens) {
    return cache.cachedLength(namespace, tokens);
  }

  @Override
  public List<PageKey> pageKeys(long namespace, int[] tokens) {
    return cache.pageKeys(namespace, tokens);
  }

  @Override
  public String toString() {
    return "CacheView[" + cache.config() + "]";
  }
}
