package io.kvtier.core.cache.testing;

import io.kvtier.core.cache.RankCache;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Deliberately broken variants of the rules of ARCHITECTURE.md §4, for the regression proofs of the
 * multi-rank simulator: each one lets rank-local state decide something that must be replicated,
 * and a simulator that is worth its name reports the resulting divergence or desync as an
 * exception. Exported to {@code io.kvtier.testkit} only; never use them outside tests.
 *
 * <p>A variant stays on until {@link #reset(RankCache)}. Switch it on on every rank at the same
 * point (before the first request), like the engine bug it stands for.
 */
public final class CacheTestHooks {
  private static volatile RuleAccess access;

  private CacheTestHooks() {}

  /**
   * The seed defect of issue "Many ranks that cannot deadlock": the prepared-backup attach
   * decision additionally requires that every streamed layer copy of the backup has finished on
   * this rank ({@code TransferHandle.isDone()}, rank-local and timed by the copy engine). When one
   * has not, the backup is rolled back and the node gets a new synchronous catch-up backup (its
   * own ack), as the buggy engine did. Ranks whose copies run at different speeds then queue
   * different acks, and their write FIFOs and replicated states diverge.
   *
   * @param cache the cache to break
   */
  public static void useDrainTimedAttachPredicate(RankCache cache) {
    access().drainTimedAttach(Objects.requireNonNull(cache, "cache"), true);
  }

  /**
   * Failure class 5: lastAccess stamps of the nodes an operation touches come from {@code clock}
   * (a per-rank, wall-clock-like source) instead of the logical clock, so LRU-like eviction
   * orders differ between ranks. The logical clock itself keeps counting.
   *
   * @param cache the cache to break
   * @param clock this rank's clock
   */
  public static void useWallClockEviction(RankCache cache, LongSupplier clock) {
    access()
        .accessClock(
            Objects.requireNonNull(cache, "cache"), Objects.requireNonNull(clock, "clock"));
  }

  /**
   * Failure class 2: a device allocation of this rank ({@code allocate}, {@code allocateTokens})
   * throws {@link io.kvtier.core.cache.PoolExhaustedException} whenever {@code failNow} returns
   * true, without any agreement with the other ranks.
   *
   * @param cache the cache to break
   * @param failNow asked once per allocation of at least one page
   */
  public static void useRankLocalAllocationFailures(RankCache cache, BooleanSupplier failNow) {
    access()
        .allocationFailure(
            Objects.requireNonNull(cache, "cache"), Objects.requireNonNull(failNow, "failNow"));
  }

  /**
   * Class 6: the device pages a streamed prepared-backup copy reads are not held until the ack
   * that carries the copy commits, so an abort, a duplicate or an eviction frees them under the
   * copy, and the next owner writes them while the copy still reads (the asserting device pool
   * reports it).
   *
   * @param cache the cache to break
   */
  public static void freeStreamedSourcesAtOnce(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 6);
  }

  /**
   * Class 7: a write commit takes this rank's own ready count (and failures) instead of the
   * agreed one, so a backup is visible on a fast rank before the MIN commit; the replicas
   * diverge.
   *
   * @param cache the cache to break
   */
  public static void commitWritesWithTheLocalCount(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 7);
  }

  /**
   * Class 8: a prepared backup rolled back before any layer was streamed keeps its reserved host
   * slots: a leak the invariant checks report.
   *
   * @param cache the cache to break
   */
  public static void leakRolledBackReservations(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 8);
  }

  /**
   * Class 9: a load-back evicts device pages before it locks the chain it loads, so a write-back
   * eviction that evicts host leaves may take the chain itself (re-entrant eviction).
   *
   * @param cache the cache to break
   */
  public static void evictBeforeLockingTheLoadBack(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 9);
  }

  /**
   * Class 10: a split of a node whose backup is pending leaves the new upper half out of the
   * pending ack, so the half is never committed.
   *
   * @param cache the cache to break
   */
  public static void splitPendingNodesOutsideTheirAck(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 10);
  }

  /**
   * Class 11 (HYBRID.md §7, issue 22's stranded state): a device eviction that demotes a
   * committed node with a recurrent-state snapshot frees its host snapshot too, so the node's
   * host KV stays matched but can never be resumed from.
   *
   * @param cache the cache to break
   */
  public static void demoteFreeingTheHostSnapshot(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 11);
  }

  /**
   * Class 12 (HYBRID.md §7): a node takes a request's snapshot at the insert only when this
   * rank's write copies are all done (rank-local copy progress deciding something replicated),
   * so ranks whose copies run at different speeds keep different snapshots and diverge.
   *
   * @param cache the cache to break
   */
  public static void decideSnapshotsFromCopyProgress(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 12);
  }

  /**
   * Not a defect but the field's rule (issue 22): requests take interval snapshots only, never
   * the tail at their insert end, so a conversation whose interval snapshots fall inside
   * request-unique tokens resumes from nothing. For the tests that show the low usable rate.
   *
   * @param cache the cache
   */
  public static void takeIntervalSnapshotsOnly(RankCache cache) {
    access().brokenClass(Objects.requireNonNull(cache, "cache"), 13);
  }

  /**
   * How often the broken variants of classes 6 to 10 changed a decision of {@code cache}: a
   * proof checks it is positive, so that a run the checks pass cannot mean the variant never
   * ran.
   *
   * @param cache the cache
   * @return the count since the cache was built
   */
  public static long firedVariants(RankCache cache) {
    return access().fired(Objects.requireNonNull(cache, "cache"));
  }

  /**
   * How many finishes and chunk inserts of {@code cache} were given an array other than the one
   * the request was admitted with, and so checked every token and compared the admitted prefix
   * again (the slow path); 0 means every request took the fast path, as the engine's do.
   *
   * @param cache the cache
   * @return the count since the cache was built
   */
  public static long tokenRechecks(RankCache cache) {
    return access().tokenRechecks(Objects.requireNonNull(cache, "cache"));
  }

  /**
   * Switches every broken variant of {@code cache} off: the real rules apply again.
   *
   * @param cache the cache
   */
  public static void reset(RankCache cache) {
    access().reset(Objects.requireNonNull(cache, "cache"));
  }

  /**
   * Engine-internal: installs the accessor of the cache package. Called once, by that package.
   *
   * @param accessor the accessor
   * @throws IllegalStateException if one is installed already
   */
  public static synchronized void install(RuleAccess accessor) {
    Objects.requireNonNull(accessor, "accessor");
    if (access != null) {
      throw new IllegalStateException(
          "a RuleAccess is installed already: only the cache package" + " installs one, once");
    }
    access = accessor;
  }

  private static RuleAccess access() {
    RuleAccess a = access;
    if (a == null) {
      try {
        // Initializing the cache package's accessor class installs it (see RuleSwitches).
        Class.forName(
            "io.kvtier.core.cache.RuleSwitches", true, CacheTestHooks.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException(
            "io.kvtier.core.cache.RuleSwitches is missing from"
                + " io.kvtier.core: the test hooks need the engine they belong to",
            e);
      }
      a = access;
    }
    return a;
  }
}
