package io.kvtier.core.rank;

/** The mutable counters behind {@link RankEngineStats}; see there for their meaning. */
final class EngineCounters {
  long ticks;
  long arrived;
  long admitted;
  long finished;
  long aborted;
  long rejected;
  long loadFailureAborts;
  long loadFailureRecomputes;
  long loadFailureLostTokens;
  long promptTokens;
  long deviceHitTokens;
  long hostHitTokens;
  long l3HitTokens;
  long computedTokens;
  long prefillTokens;
  long generatedTokens;
  long kvVerifiedPages;
  long kvMismatches;
  long syncTicks;
  long digestChecks;
  long idleTicks;
  long idleTickCalls;
  long maxProtocolCallsPerTick;
  long skippedTicks;
  long usableHitTokens;

  /** Speculative decoding's counts per {@link SpeculationStats.Tier} (not in the digest). */
  final long[] specSteps = new long[SpeculationStats.Tier.values().length];

  final long[] specProposed = new long[SpeculationStats.Tier.values().length];
  final long[] specAccepted = new long[SpeculationStats.Tier.values().length];

  SpeculationStats speculation() {
    return new SpeculationStats(specSteps, specProposed, specAccepted);
  }

  /** Transfer counts ({@link TransferStats}); in the digest only once any is not 0. */
  long publishes;

  long pagesPublished;
  long publishFailures;
  long awaits;
  long transferPagesExpected;
  long transferPagesFetched;
  long transferPagesRecomputed;

  TransferStats transfers() {
    return new TransferStats(
        publishes,
        pagesPublished,
        publishFailures,
        awaits,
        transferPagesExpected,
        transferPagesFetched,
        transferPagesRecomputed);
  }

  RankEngineStats snapshot(long collectiveCalls) {
    return new RankEngineStats(
        ticks,
        arrived,
        admitted,
        finished,
        aborted,
        rejected,
        loadFailureAborts,
        promptTokens,
        deviceHitTokens,
        hostHitTokens,
        computedTokens,
        generatedTokens,
        kvVerifiedPages,
        kvMismatches,
        collectiveCalls,
        syncTicks,
        digestChecks,
        idleTicks,
        idleTickCalls,
        maxProtocolCallsPerTick,
        l3HitTokens,
        prefillTokens,
        skippedTicks,
        usableHitTokens,
        loadFailureRecomputes,
        loadFailureLostTokens);
  }

  /**
   * Folds the replicated counters into a digest; {@code kvMismatches} is rank-local, and {@code
   * prefillTokens} is left out: it follows from the same decisions as {@code computedTokens}, and
   * adding it would change every digest that records of past runs hold.
   */
  void digest(Digest d) {
    d.add(ticks)
        .add(arrived)
        .add(admitted)
        .add(finished)
        .add(aborted)
        .add(rejected)
        .add(loadFailureAborts)
        .add(promptTokens)
        .add(deviceHitTokens)
        .add(hostHitTokens)
        .add(computedTokens)
        .add(generatedTokens)
        .add(kvVerifiedPages)
        .add(syncTicks)
        .add(digestChecks)
        .add(idleTicks)
        .add(idleTickCalls)
        .add(l3HitTokens);
    // Only when there are any, so that a run without failed loads keeps its digest.
    if (loadFailureRecomputes != 0) {
      d.add(loadFailureRecomputes).add(loadFailureLostTokens);
    }
    // Only when there are any, so that a run without skips keeps the digest it always had.
    if (skippedTicks != 0) {
      d.add(skippedTicks);
    }
    // Likewise only where it differs from the reused tokens (with recurrent-state snapshots).
    if (usableHitTokens != deviceHitTokens + hostHitTokens + l3HitTokens) {
      d.add(usableHitTokens);
    }
    // Only with transfers, so that a run without keeps its digest.
    if (publishes != 0 || awaits != 0) {
      d.add(publishes)
          .add(pagesPublished)
          .add(publishFailures)
          .add(awaits)
          .add(transferPagesExpected)
          .add(transferPagesFetched)
          .add(transferPagesRecomputed);
    }
  }
}
