package io.kvtier.core.cache;

import java.util.function.BooleanSupplier;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/**
 * Deliberately broken variants of the rules, switched on only by the regression proofs through
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

  /** Class 6: the device pages a streamed copy reads are not held, so a release frees them. */
  boolean unheldStreamSources;

  /** Class 7: a write commit takes this rank's own ready count, not the agreed one. */
  boolean localWriteCommitCount;

  /** Class 8: a rolled-back prepared backup without streamed layers keeps its host slots. */
  boolean leakRolledBackReservation;

  /** Class 9: a load-back evicts device pages before it locks its chain. */
  boolean evictBeforeLockingLoadBack;

  /** Class 10: a split of a pending node leaves the new upper half out of the pending ack. */
  boolean splitOutsidePendingAck;

  /**
   * Class 11 (HYBRID.md §7): a device eviction that demotes a committed node frees its host
   * snapshot too, stranding the state the host copy backs (the node stays matched, never usable).
   */
  boolean demoteFreesHostSnapshot;

  /**
   * Class 12 (HYBRID.md §7): a node takes a request's snapshot at its insert only if this says
   * true, this rank's copy progress (no write copy in flight here); null = real rule.
   */
  BooleanSupplier snapshotFromCopyProgress;

  /**
   * A test-only switch, not a defect: requests take interval snapshots only, no tail, as the
   * field's engines that checkpoint inside request-unique tokens (issue 22's 0% usable rate).
   */
  boolean noTailSnapshot;

  /**
   * How often a broken variant of classes 6 to 10 changed what the real rule does: a proof
   * checks it fired, so that a passing run cannot mean the variant was never reached.
   */
  long fired;

  void reset() {
    drainTimedStreamsDone = null;
    accessClock = null;
    allocationFailure = null;
    unheldStreamSources = false;
    localWriteCommitCount = false;
    leakRolledBackReservation = false;
    evictBeforeLockingLoadBack = false;
    splitOutsidePendingAck = false;
    demoteFreesHostSnapshot = false;
    snapshotFromCopyProgress = null;
    noTailSnapshot = false;
  }
}
