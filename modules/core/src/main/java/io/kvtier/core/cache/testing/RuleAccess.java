package io.kvtier.core.cache.testing;

import io.kvtier.core.cache.RankCache;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Engine-internal: how {@link CacheTestHooks} reaches the rule switches of a {@link RankCache},
 * which are package-private in {@code io.kvtier.core.cache}. Implemented once by that package and
 * installed on first use of the hooks; tests call {@link CacheTestHooks}, never this.
 */
public interface RuleAccess {

  /**
   * Switches the drain-timed attach predicate on or off.
   *
   * @param cache the cache
   * @param on true for the broken variant
   */
  void drainTimedAttach(RankCache cache, boolean on);

  /**
   * Sets the clock that stamps lastAccess.
   *
   * @param cache the cache
   * @param clock the per-rank clock, or null for the logical clock
   */
  void accessClock(RankCache cache, LongSupplier clock);

  /**
   * Sets the rank-local allocation failure source.
   *
   * @param cache the cache
   * @param failNow says when an allocation fails, or null for the real rule
   */
  void allocationFailure(RankCache cache, BooleanSupplier failNow);

  /**
   * Switches one broken variant of failure classes 6 to 10 (CACHE.md §14) on.
   *
   * @param cache the cache
   * @param failureClass 6 to 10
   */
  void brokenClass(RankCache cache, int failureClass);

  /**
   * How often the broken variants of classes 6 to 10 changed a decision of this cache.
   *
   * @param cache the cache
   * @return the count
   */
  long fired(RankCache cache);

  /**
   * Restores every real rule.
   *
   * @param cache the cache
   */
  void reset(RankCache cache);

  /**
   * The finishes and chunk inserts of {@code cache} that were given an array other than the
   * admitted one (see {@link CacheTestHooks#tokenRechecks}).
   *
   * @param cache the cache
   * @return the count since the cache was built
   */
  long tokenRechecks(RankCache cache);
}
