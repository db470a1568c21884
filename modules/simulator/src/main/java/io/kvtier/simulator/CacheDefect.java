package io.kvtier.simulator;

import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.testing.CacheTestHooks;
import java.util.SplittableRandom;

/**
 * Deliberately broken cache rules (CACHE.md §14) that the simulator switches on, on every
 * rank, through {@link CacheTestHooks}, to prove that it catches them. Each reads rank-local
 * state where the real rule reads replicated state; the rank-local sources here are seeded per
 * rank, so that a failing run replays exactly.
 */
public enum CacheDefect {
  /** The real rules. */
  NONE,
  /**
   * The seed defect: the prepared-backup attach predicate also requires the streamed copies to
   * have finished on this rank ({@link CacheTestHooks#useDrainTimedAttachPredicate}).
   */
  DRAIN_TIMED_ATTACH,
  /**
   * Class 5: eviction order from a per-rank clock ({@link CacheTestHooks#useWallClockEviction}):
   * the tick's time plus a per-rank jitter of up to one tick, as unsynchronized host clocks read.
   */
  WALL_CLOCK_EVICTION,
  /**
   * Class 2: each rank's device allocations fail on their own, 5% of the time ({@link
   * CacheTestHooks#useRankLocalAllocationFailures}).
   */
  RANK_LOCAL_ALLOCATION_FAILURE,
  /**
   * Class 6: the device pages a streamed prepared-backup copy reads are freed at once (an abort,
   * a duplicate, an eviction) instead of at the commit of the ack that carries the copy ({@link
   * CacheTestHooks#freeStreamedSourcesAtOnce}); caught by the {@code asserting} device pool when
   * the next owner writes a page the copy still reads.
   */
  FREED_STREAMED_SOURCES;

  /** Switches the defect on for one rank's cache. */
  void apply(RankCache cache, int rank, long seed, TickClock clock, long tickNanos) {
    SplittableRandom random = new SplittableRandom(seed * 31 + rank * 0x9E3779B97F4A7C15L);
    switch (this) {
      case NONE -> {}
      case DRAIN_TIMED_ATTACH -> CacheTestHooks.useDrainTimedAttachPredicate(cache);
      case WALL_CLOCK_EVICTION ->
          CacheTestHooks.useWallClockEviction(
              cache, () -> clock.nanoTime() + random.nextLong(tickNanos));
      case RANK_LOCAL_ALLOCATION_FAILURE ->
          CacheTestHooks.useRankLocalAllocationFailures(cache, () -> random.nextDouble() < 0.05);
      case FREED_STREAMED_SOURCES -> CacheTestHooks.freeStreamedSourcesAtOnce(cache);
    }
  }
}
