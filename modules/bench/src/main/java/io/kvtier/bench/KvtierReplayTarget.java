package io.kvtier.bench;

import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import java.util.Objects;

/**
 * kvtier's engine as a replay target: a {@link RankCache} without memory behind its slots (the
 * allocator-only mode), LRU eviction, no host tier, driven through the same per-request lifecycle
 * as {@link ReferenceRadixCache}: {@code admit} (match and lock), {@code allocateTokens} for the
 * uncached rest (evicting the shortfall when the pool is short; {@code growTo}, which returns the
 * page count rather than a copy of the new slots, as a scheduler that reads page tables with
 * {@code copyPageTable} would), {@code finish} (insert, free the duplicates, unlock).
 *
 * <p>An unbounded capacity becomes a pool of {@link #UNBOUNDED_TOKENS} tokens, more than either
 * fixed trace holds in total, so nothing is ever evicted. {@link #reset} empties the cache by
 * evicting every node rather than building a new one, so that the pool's slot stack (16 MiB at
 * page size 1 unbounded) is not reallocated between two replays of a benchmark.
 */
public final class KvtierReplayTarget implements ReplayTarget {

  /**
   * The pool size in tokens used for an unbounded capacity: a power of two above the 2,228,224
   * tokens of the larger fixed trace, so that a replay of a whole trace never evicts.
   */
  public static final int UNBOUNDED_TOKENS = 1 << 22;

  private final RankCache cache;
  private long nextRequestId;

  /**
   * An empty cache.
   *
   * @param pageSize tokens per page, at least 1
   * @param capacityTokens device pool slots in tokens, a positive multiple of {@code pageSize},
   *     or {@link ReferenceRadixCache#UNBOUNDED}
   */
  public KvtierReplayTarget(int pageSize, long capacityTokens) {
    if (pageSize < 1) {
      throw new IllegalArgumentException("pageSize=" + pageSize + " must be >= 1");
    }
    long tokens =
        capacityTokens == ReferenceRadixCache.UNBOUNDED ? UNBOUNDED_TOKENS : capacityTokens;
    if (tokens < pageSize || tokens % pageSize != 0 || tokens / pageSize > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "capacityTokens="
              + capacityTokens
              + " must be a positive multiple of pageSize="
              + pageSize
              + " of at most "
              + Integer.MAX_VALUE
              + " pages");
    }
    CacheConfig config =
        CacheConfig.of(pageSize, (int) (tokens / pageSize), 0)
            .withEvictionPolicy(EvictionPolicy.LRU);
    this.cache = RankCache.withoutMemory(config);
  }

  @Override
  public String name() {
    return "kvtier";
  }

  @Override
  public void reset() {
    // No request is active between replays, so every node is an unlocked candidate: evicting
    // them all leaves the root alone and every slot free.
    cache.evictDevice(Integer.MAX_VALUE);
    if (cache.nodeCount() != 0 || cache.deviceUsage().free() != cache.config().devicePages()) {
      throw new IllegalStateException(
          "reset left "
              + cache.nodeCount()
              + " nodes and "
              + cache.deviceUsage()
              + ": a request of an earlier replay is still active");
    }
  }

  @Override
  public long replay(int[] prompt) {
    Objects.requireNonNull(prompt, "prompt");
    long id = nextRequestId++;
    int cached = cache.admit(id, prompt).devicePrefixLength();
    cache.growTo(id, prompt.length);
    cache.finish(id);
    return cached;
  }

  /**
   * The engine, for checks after a replay.
   *
   * @return the cache
   */
  public RankCache cache() {
    return cache;
  }
}
