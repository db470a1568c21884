package io.kvtier.core.cache;

import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.cache.testing.RuleAccess;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The cache package's side of {@link CacheTestHooks}: the hooks live in another package and so
 * cannot touch a cache's package-private rule switches; this class, loaded by name from the
 * hooks on first use (never by the request path), hands them an accessor once.
 */
final class RuleSwitches implements RuleAccess {
  static {
    CacheTestHooks.install(new RuleSwitches());
  }

  private RuleSwitches() {}

  @Override
  public void drainTimedAttach(RankCache cache, boolean on) {
    // The one place where rank-local completion is handed to a decision, on purpose.
    Rooms rooms = cache.rooms();
    rooms.rules().drainTimedStreamsDone = on ? rooms.localProgress()::streamedDoneDrainTimed : null;
  }

  @Override
  public void accessClock(RankCache cache, LongSupplier clock) {
    cache.rooms().rules().accessClock = clock;
  }

  @Override
  public void allocationFailure(RankCache cache, BooleanSupplier failNow) {
    cache.rooms().rules().allocationFailure = failNow;
  }

  @Override
  public void brokenClass(RankCache cache, int failureClass) {
    RuleVariants rules = cache.rooms().rules();
    switch (failureClass) {
      case 6 -> rules.unheldStreamSources = true;
      case 7 -> rules.localWriteCommitCount = true;
      case 8 -> rules.leakRolledBackReservation = true;
      case 9 -> rules.evictBeforeLockingLoadBack = true;
      case 10 -> rules.splitOutsidePendingAck = true;
      case 11 -> rules.demoteFreesHostSnapshot = true;
      case 12 -> {
        // Rank-local on purpose: whether this rank's write copies are all done.
        LocalProgress progress = cache.rooms().localProgress();
        rules.snapshotFromCopyProgress =
            () -> progress.readyWritePrefix() == progress.writeGroups();
      }
      case 13 -> rules.noTailSnapshot = true;
      default ->
          throw new IllegalArgumentException(
              "failure class " + failureClass + " has no broken variant here: pass 6 to 13");
    }
  }

  @Override
  public long fired(RankCache cache) {
    return cache.rooms().rules().fired;
  }

  @Override
  public long tokenRechecks(RankCache cache) {
    return cache.rooms().table().tokenRechecks;
  }

  @Override
  public void reset(RankCache cache) {
    cache.rooms().rules().reset();
  }
}
