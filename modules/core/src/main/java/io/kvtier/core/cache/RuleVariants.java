package io.kvtier.core.cache;

import java.util.function.BooleanSupplier;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/**
 * Deliberately broken variants of three rules, switched on only by the regression proofs through
 * {@link io.kvtier.core.cache.testing.CacheTestHooks}. Each variant lets rank-local state into a
 * decision that must be replicated, so that a multi-rank simulator can show it catches the
 * defect class. All off by default; the request path pays one field read and a null check.
 */
final class RuleVariants {
  /**
   * Whether request {@code id}'s streamed copies are done on this rank (drain-timed); when set,
   * a prepared backup attaches only if it says true. Null = real rule.
   */
  LongPredicate drainTimedStreamsDone;

  /** Stamps lastAccess from a per-rank clock instead of the logical clock; null = real rule. */
  LongSupplier accessClock;

  /** Fails a device allocation whenever this says so, without agreement; null = real rule. */
  BooleanSupplier allocationFailure;

  void reset() {
    drainTimedStreamsDone = null;
    accessClock = null;
    allocationFailure = null;
  }
}
