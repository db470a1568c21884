package io.kvtier.simulator;

import io.kvtier.core.cache.CacheStats;
import java.util.Objects;

/**
 * What a {@link MultiRankSimulator} run found. Every field but {@link #wallSeconds()} is a pure
 * function of the {@link SimulationConfig}: the same config gives an equal result, bit for bit
 * ({@link #withoutWallTime()} compares them).
 *
 * <p>Counters come from rank 0 where they are replicated (equal on every rank of a healthy run);
 * {@code kvVerifiedPages}, {@code kvMismatches} and {@code leakedPages} are summed over ranks
 * (over the collective with a SUM reduction when each rank is a process of its own).
 *
 * @param workload the workload spec as run, every parameter spelled out
 * @param seed the seed
 * @param ranks the number of ranks
 * @param requests requests that arrived
 * @param finished requests finished
 * @param aborted requests aborted by a command
 * @param rejected requests dropped because they could never get their pages
 * @param loadFailureAborts requests aborted because a load-back they needed failed to copy
 * @param ticks ticks run, the drain included
 * @param promptTokens prompt tokens of admitted requests
 * @param hitTokens prompt tokens reused, per tier
 * @param computedTokens tokens whose KV the model computed
 * @param collectives the engine's collective calls
 * @param cache the cache's replicated counters on rank 0 (backups, loads, evictions)
 * @param replicaDigestsEqual whether every digest comparison found equal replicas
 * @param desyncs collective desyncs and watchdog timeouts (a run stops at the first)
 * @param leakedPages device and host pages neither free nor evictable after the drain; 0 when
 *     the run stopped before the end of its drain (any failure but {@link SimulationFailure#LEAK}
 *     and {@link SimulationFailure#REPLICA_DIVERGENCE}: a failed rank, a desync, a timeout): the
 *     pages of the requests in flight are not leaks
 * @param kvVerifiedPages pages whose KV the model checked after a load-back
 * @param kvMismatches checked pages whose KV was wrong
 * @param failure what stopped the run, {@link SimulationFailure#NONE} if it completed cleanly
 * @param failureTick the tick of the failure, -1 if none; for {@link
 *     SimulationFailure#RANK_FAILED} the tick at which the rank's step failed, on every rank
 * @param failureMessage the failure's message, empty if none
 * @param wallSeconds the run's wall-clock time
 * @param timeline occupancy and counters over time and each request's milestones, from rank 0
 * @param replicaDigest the replica digest at the end of the run (after the drain, or where the
 *     run stopped): rank 0's in a threaded run, the reporting rank's own with {@link
 *     MultiRankSimulator#runRank}; a healthy run ends with it on every rank, and the same config
 *     gives the same digest whichever collective joined the ranks
 * @param prefillTokens the prompt tokens among {@code computedTokens}; the rest are decode tokens
 *     ({@link #decodeTokens()}). The prompt tokens are the reused ones, these, and those that
 *     requests aborted before their prefill ended never reached
 * @param unreadRequests requests of the workload that never arrived: the input ended at {@link
 *     SimulationConfig#ticks()} or {@link SimulationConfig#requests()}, or the run stopped, before
 *     the workload was replayed to its end
 * @param usableHitTokens the part of {@code hitTokens} that requests could resume from, per tier
 *     (HYBRID.md §5, §8): with recurrent-state snapshots a match is usable only up to its deepest
 *     snapshot, and the request computes the rest; without them (no recurrent layer) equal to
 *     {@code hitTokens}. Never above {@code hitTokens} in any tier
 * @param snapshotsVerified resumes from a recurrent-state snapshot that the model checked (a
 *     request's first step from a position above 0), summed over ranks; 0 without snapshots
 * @param snapshotMismatches checked resumes whose state was wrong or missing, summed over ranks
 */
public record SimulationResult(
    String workload,
    long seed,
    int ranks,
    long requests,
    long finished,
    long aborted,
    long rejected,
    long loadFailureAborts,
    long ticks,
    long promptTokens,
    HitTokens hitTokens,
    long computedTokens,
    CollectiveCounts collectives,
    CacheStats cache,
    boolean replicaDigestsEqual,
    long desyncs,
    long leakedPages,
    long kvVerifiedPages,
    long kvMismatches,
    SimulationFailure failure,
    long failureTick,
    String failureMessage,
    double wallSeconds,
    SimulationTimeline timeline,
    long replicaDigest,
    long prefillTokens,
    long unreadRequests,
    HitTokens usableHitTokens,
    long snapshotsVerified,
    long snapshotMismatches) {

  /**
   * Prompt tokens reused from each tier.
   *
   * @param device found on the device (L1)
   * @param host loaded back from the host (L2)
   * @param l3 loaded back from the host after an L3 prefetch brought them there
   */
  public record HitTokens(long device, long host, long l3) {
    /**
     * All reused tokens.
     *
     * @return the sum
     */
    public long total() {
      return device + host + l3;
    }

    /**
     * Whether no tier of this has more tokens than the same tier of {@code other}.
     *
     * @param other the bound
     * @return true if every tier is at most {@code other}'s
     */
    public boolean within(HitTokens other) {
      return device <= other.device && host <= other.host && l3 <= other.l3;
    }
  }

  /**
   * The engine's collective calls (rank 0; equal on every rank).
   *
   * @param calls every call of the rank protocol
   * @param syncTicks ticks that ran the fused sync reduction
   * @param digestChecks in-band digest checks
   * @param idleTicks ticks with nothing outstanding at the sync step
   * @param idleTickCalls calls in idle ticks besides the recv broadcast and the digest check: 0
   *     when the protocol holds
   * @param maxCallsPerTick the most calls in one tick, digest checks excluded: at most 2
   * @param skippedTicks idle ticks that rank 0 skipped ({@link
   *     io.kvtier.core.rank.TickCommands#skippedTicks()}): no rank ran them and they made no
   *     call, not even the recv broadcast; counted in {@code idleTicks} and the result's ticks
   *     too, and 0 with {@link SimulationConfig#skipIdleTicks()} off
   */
  public record CollectiveCounts(
      long calls,
      long syncTicks,
      long digestChecks,
      long idleTicks,
      long idleTickCalls,
      long maxCallsPerTick,
      long skippedTicks) {}

  /** Validates the fields. */
  public SimulationResult {
    Objects.requireNonNull(workload, "workload");
    Objects.requireNonNull(hitTokens, "hitTokens");
    Objects.requireNonNull(collectives, "collectives");
    Objects.requireNonNull(cache, "cache");
    Objects.requireNonNull(failure, "failure");
    Objects.requireNonNull(failureMessage, "failureMessage");
    Objects.requireNonNull(timeline, "timeline");
    Objects.requireNonNull(usableHitTokens, "usableHitTokens");
  }

  /**
   * A result without recurrent-state snapshots: every hit token usable, no snapshot checked.
   *
   * @param workload the workload spec
   * @param seed the seed
   * @param ranks the number of ranks
   * @param requests requests that arrived
   * @param finished requests finished
   * @param aborted requests aborted by a command
   * @param rejected requests rejected
   * @param loadFailureAborts requests aborted by a failed load-back
   * @param ticks ticks run
   * @param promptTokens prompt tokens of admitted requests
   * @param hitTokens prompt tokens reused, per tier
   * @param computedTokens tokens computed
   * @param collectives the collective calls
   * @param cache the cache's counters
   * @param replicaDigestsEqual whether the digests were equal
   * @param desyncs collective desyncs
   * @param leakedPages leaked pages
   * @param kvVerifiedPages pages checked after a load-back
   * @param kvMismatches checked pages that were wrong
   * @param failure what stopped the run
   * @param failureTick the tick of the failure
   * @param failureMessage the failure's message
   * @param wallSeconds the wall-clock time
   * @param timeline the timeline
   * @param replicaDigest the final replica digest
   * @param prefillTokens prompt tokens computed
   * @param unreadRequests requests that never arrived
   */
  public SimulationResult(
      String workload,
      long seed,
      int ranks,
      long requests,
      long finished,
      long aborted,
      long rejected,
      long loadFailureAborts,
      long ticks,
      long promptTokens,
      HitTokens hitTokens,
      long computedTokens,
      CollectiveCounts collectives,
      CacheStats cache,
      boolean replicaDigestsEqual,
      long desyncs,
      long leakedPages,
      long kvVerifiedPages,
      long kvMismatches,
      SimulationFailure failure,
      long failureTick,
      String failureMessage,
      double wallSeconds,
      SimulationTimeline timeline,
      long replicaDigest,
      long prefillTokens,
      long unreadRequests) {
    this(
        workload,
        seed,
        ranks,
        requests,
        finished,
        aborted,
        rejected,
        loadFailureAborts,
        ticks,
        promptTokens,
        hitTokens,
        computedTokens,
        collectives,
        cache,
        replicaDigestsEqual,
        desyncs,
        leakedPages,
        kvVerifiedPages,
        kvMismatches,
        failure,
        failureTick,
        failureMessage,
        wallSeconds,
        timeline,
        replicaDigest,
        prefillTokens,
        unreadRequests,
        hitTokens,
        0,
        0);
  }

  /**
   * Whether the run completed with every check green: no failure, equal digests, no desync, no
   * leak, no KV mismatch, no snapshot mismatch.
   *
   * @return true if clean
   */
  public boolean passed() {
    return failure == SimulationFailure.NONE
        && replicaDigestsEqual
        && desyncs == 0
        && leakedPages == 0
        && kvMismatches == 0
        && snapshotMismatches == 0;
  }

  /**
   * The usable share of the matched hit tokens: what a 0% usable hit rate shows.
   *
   * @return {@code usableHitTokens.total() / hitTokens.total()}, 1 when nothing matched
   */
  public double usableOfMatched() {
    return hitTokens.total() == 0 ? 1 : (double) usableHitTokens.total() / hitTokens.total();
  }

  /**
   * Decode tokens whose KV the model computed.
   *
   * @return {@code computedTokens - prefillTokens}
   */
  public long decodeTokens() {
    return computedTokens - prefillTokens;
  }

  /**
   * Prompt tokens that were neither reused nor computed: those of requests aborted (or stopped
   * by a failure) before their prefill ended. Reused are the usable hit tokens: a matched token
   * past a request's usable length is computed again, so it counts among {@code prefillTokens}.
   *
   * @return tokens
   */
  public long unreachedPromptTokens() {
    return promptTokens - usableHitTokens.total() - prefillTokens;
  }

  /**
   * Collective calls per tick.
   *
   * @return the mean, 0 if no tick ran
   */
  public double collectivesPerTick() {
    return ticks == 0 ? 0 : (double) collectives.calls() / ticks;
  }

  /**
   * This result with {@code wallSeconds} zeroed, to compare runs.
   *
   * @return a copy
   */
  public SimulationResult withoutWallTime() {
    return new SimulationResult(
        workload,
        seed,
        ranks,
        requests,
        finished,
        aborted,
        rejected,
        loadFailureAborts,
        ticks,
        promptTokens,
        hitTokens,
        computedTokens,
        collectives,
        cache,
        replicaDigestsEqual,
        desyncs,
        leakedPages,
        kvVerifiedPages,
        kvMismatches,
        failure,
        failureTick,
        failureMessage,
        0,
        timeline,
        replicaDigest,
        prefillTokens,
        unreadRequests,
        usableHitTokens,
        snapshotsVerified,
        snapshotMismatches);
  }
}
