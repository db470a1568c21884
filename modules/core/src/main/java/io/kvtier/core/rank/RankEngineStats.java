package io.kvtier.core.rank;

/**
 * Counters of one {@link RankEngine}. All are replicated (equal on every rank of a healthy group)
 * except {@link #kvMismatches()}, which counts wrong bytes this rank's model found.
 *
 * @param ticks ticks completed, those skipped included ({@link #skippedTicks})
 * @param arrived requests received
 * @param admitted requests admitted (matched, locked and given pages)
 * @param finished requests finished and inserted into the cache
 * @param aborted requests aborted by a command, waiting or running
 * @param rejected requests dropped with {@link RequestOutcome#REJECTED}: at entry (a token
 *     outside the vocabulary, too long), or because they can never get their pages (larger
 *     than what the device pool can free with nothing else running)
 * @param loadFailureAborts requests that ended because a load-back they needed failed ({@link
 *     LoadFailurePolicy#FAIL}; 0 under the default, which recomputes)
 * @param promptTokens prompt tokens of admitted requests
 * @param deviceHitTokens prompt tokens found on the device at admission
 * @param hostHitTokens prompt tokens loaded back from the host at admission, L3 hits excluded
 * @param computedTokens tokens whose KV the model computed (prefill and decode)
 * @param generatedTokens tokens the model generated
 * @param kvVerifiedPages cached pages whose KV the model checked after a load-back committed
 * @param kvMismatches checked pages whose KV was wrong on this rank (rank-local)
 * @param collectiveCalls collective calls made by the engine (the guard's extra reductions, if
 *     any, not counted)
 * @param syncTicks ticks whose sync step ran the fused reduction
 * @param digestChecks replica digest checks run
 * @param idleTicks ticks in which the replicated outstanding count was 0 at the sync step
 * @param idleTickCalls collective calls made in idle ticks other than the {@code recv} broadcast
 *     and the digest check (a debug option of its own); 0 unless a defect issues collectives
 *     the protocol does not
 * @param maxProtocolCallsPerTick the most calls in one tick, the digest check excluded: at most
 *     2 (the recv broadcast and the fused sync reduction) when the protocol holds
 * @param l3HitTokens prompt tokens loaded back from the host at admission that an L3 prefetch
 *     had put there for the request
 * @param prefillTokens the prompt tokens among {@code computedTokens} (the rest are decode tokens,
 *     one per generated token but the last): with the reused tokens they make up the prompt
 *     tokens, but for those of requests aborted before their prefill ended
 * @param skippedTicks idle ticks that rank 0 skipped ({@link TickCommands#skippedTicks()}):
 *     nothing was outstanding and nothing arrived, so no rank ran them and they made no call;
 *     counted in {@link #ticks} and {@link #idleTicks} too
 * @param usableHitTokens prompt tokens admitted requests resumed from (HYBRID.md §5): {@link
 *     #reusedTokens()} for a model without recurrent state; with snapshots the matched prefix
 *     up to the deepest snapshot, so that a low usable rate shows beside the matched one
 * @param loadFailureRecomputes times a request whose load-back failed went back to the queue to
 *     be recomputed ({@link LoadFailurePolicy#RECOMPUTE}); its admission's counts were taken
 *     back, so the hit and prompt counters hold only the admission that ran
 * @param loadFailureLostTokens the tokens those failed load-backs were to bring back from the
 *     host: what the requests recomputed (or found again in L3) instead
 */
public record RankEngineStats(
    long ticks,
    long arrived,
    long admitted,
    long finished,
    long aborted,
    long rejected,
    long loadFailureAborts,
    long promptTokens,
    long deviceHitTokens,
    long hostHitTokens,
    long computedTokens,
    long generatedTokens,
    long kvVerifiedPages,
    long kvMismatches,
    long collectiveCalls,
    long syncTicks,
    long digestChecks,
    long idleTicks,
    long idleTickCalls,
    long maxProtocolCallsPerTick,
    long l3HitTokens,
    long prefillTokens,
    long skippedTicks,
    long usableHitTokens,
    long loadFailureRecomputes,
    long loadFailureLostTokens) {

  /**
   * Prompt tokens reused from the cache (device, host and L3 hits).
   *
   * @return tokens
   */
  public long reusedTokens() {
    return deviceHitTokens + hostHitTokens + l3HitTokens;
  }

  /**
   * Matched prompt tokens the requests could not resume from: {@code reusedTokens() -
   * usableHitTokens()}, 0 without recurrent-state snapshots.
   *
   * @return tokens
   */
  public long unusableHitTokens() {
    return reusedTokens() - usableHitTokens;
  }

  /**
   * Decode tokens whose KV the model computed: {@code computedTokens - prefillTokens}.
   *
   * @return tokens
   */
  public long decodeTokens() {
    return computedTokens - prefillTokens;
  }

  /**
   * Collective calls per completed tick.
   *
   * @return the mean, 0 before the first tick
   */
  public double collectiveCallsPerTick() {
    return ticks == 0 ? 0 : (double) collectiveCalls / ticks;
  }
}
