package io.kvtier.simulator;

import io.kvtier.core.cache.CacheStats;
import java.util.Objects;

/**
 * What a {@link MultiRankSimulator} run found. Every field but {@link #wallSeconds()} is a pure
 * function of the {@link SimulationConfig}: the same config gives an equal result, bit for bit
 * ({@link #withoutWallTime()} compares them).
 *
 * <p>The run's counters are one structure, {@link SimulationCounts}, read by name ({@link
 * #get}, or the accessor of the same name); the cache's replicated counters are {@link
 * CacheStats}, the collective calls {@link CollectiveCounts}. Build a result with {@link
 * #builder()} (or change one with {@link #toBuilder()}).
 *
 * @param workload the workload spec as run, every parameter spelled out
 * @param seed the seed
 * @param ranks the number of ranks
 * @param counts the run's counters ({@link SimulationCounter})
 * @param hitTokens prompt tokens reused, per tier
 * @param usableHitTokens the part of {@code hitTokens} that requests could resume from, per tier
 *     (HYBRID.md §5, §8): with recurrent-state snapshots a match is usable only up to its deepest
 *     snapshot, and the request computes the rest; without them (no recurrent layer) equal to
 *     {@code hitTokens}. Never above {@code hitTokens} in any tier
 * @param collectives the engine's collective calls
 * @param cache the cache's replicated counters on rank 0 (backups, loads, evictions)
 * @param replicaDigestsEqual whether every digest comparison found equal replicas
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
 */
public record SimulationResult(
    String workload,
    long seed,
    int ranks,
    SimulationCounts counts,
    HitTokens hitTokens,
    HitTokens usableHitTokens,
    CollectiveCounts collectives,
    CacheStats cache,
    boolean replicaDigestsEqual,
    SimulationFailure failure,
    long failureTick,
    String failureMessage,
    double wallSeconds,
    SimulationTimeline timeline,
    long replicaDigest) {

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
    Objects.requireNonNull(counts, "counts");
    Objects.requireNonNull(hitTokens, "hitTokens");
    Objects.requireNonNull(usableHitTokens, "usableHitTokens");
    Objects.requireNonNull(collectives, "collectives");
    Objects.requireNonNull(cache, "cache");
    Objects.requireNonNull(failure, "failure");
    Objects.requireNonNull(failureMessage, "failureMessage");
    Objects.requireNonNull(timeline, "timeline");
  }

  /**
   * One counter of the run.
   *
   * @param counter which
   * @return its value
   */
  public long get(SimulationCounter counter) {
    return counts.get(counter);
  }

  /** @return {@link SimulationCounter#REQUESTS} */
  public long requests() {
    return counts.get(SimulationCounter.REQUESTS);
  }

  /** @return {@link SimulationCounter#FINISHED} */
  public long finished() {
    return counts.get(SimulationCounter.FINISHED);
  }

  /** @return {@link SimulationCounter#ABORTED} */
  public long aborted() {
    return counts.get(SimulationCounter.ABORTED);
  }

  /** @return {@link SimulationCounter#REJECTED} */
  public long rejected() {
    return counts.get(SimulationCounter.REJECTED);
  }

  /** @return {@link SimulationCounter#LOAD_FAILURE_ABORTS} */
  public long loadFailureAborts() {
    return counts.get(SimulationCounter.LOAD_FAILURE_ABORTS);
  }

  /** @return {@link SimulationCounter#LOAD_FAILURE_RECOMPUTES} */
  public long loadFailureRecomputes() {
    return counts.get(SimulationCounter.LOAD_FAILURE_RECOMPUTES);
  }

  /** @return {@link SimulationCounter#LOAD_FAILURE_LOST_TOKENS} */
  public long loadFailureLostTokens() {
    return counts.get(SimulationCounter.LOAD_FAILURE_LOST_TOKENS);
  }

  /** @return {@link SimulationCounter#TICKS} */
  public long ticks() {
    return counts.get(SimulationCounter.TICKS);
  }

  /** @return {@link SimulationCounter#PROMPT_TOKENS} */
  public long promptTokens() {
    return counts.get(SimulationCounter.PROMPT_TOKENS);
  }

  /** @return {@link SimulationCounter#COMPUTED_TOKENS} */
  public long computedTokens() {
    return counts.get(SimulationCounter.COMPUTED_TOKENS);
  }

  /** @return {@link SimulationCounter#PREFILL_TOKENS} */
  public long prefillTokens() {
    return counts.get(SimulationCounter.PREFILL_TOKENS);
  }

  /** @return {@link SimulationCounter#UNREAD_REQUESTS} */
  public long unreadRequests() {
    return counts.get(SimulationCounter.UNREAD_REQUESTS);
  }

  /** @return {@link SimulationCounter#DESYNCS} */
  public long desyncs() {
    return counts.get(SimulationCounter.DESYNCS);
  }

  /** @return {@link SimulationCounter#LEAKED_PAGES} */
  public long leakedPages() {
    return counts.get(SimulationCounter.LEAKED_PAGES);
  }

  /** @return {@link SimulationCounter#KV_VERIFIED_PAGES} */
  public long kvVerifiedPages() {
    return counts.get(SimulationCounter.KV_VERIFIED_PAGES);
  }

  /** @return {@link SimulationCounter#L3_PAGES_MISSED} */
  public long l3PagesMissed() {
    return counts.get(SimulationCounter.L3_PAGES_MISSED);
  }

  /** @return {@link SimulationCounter#L3_PREFETCHES_TIMED_OUT} */
  public long l3PrefetchesTimedOut() {
    return counts.get(SimulationCounter.L3_PREFETCHES_TIMED_OUT);
  }

  /** @return {@link SimulationCounter#L3_CORRUPT_PAGES} */
  public long l3CorruptPages() {
    return counts.get(SimulationCounter.L3_CORRUPT_PAGES);
  }

  /** @return {@link SimulationCounter#L3_FLIPS_INJECTED} */
  public long l3FlipsInjected() {
    return counts.get(SimulationCounter.L3_FLIPS_INJECTED);
  }

  /** @return {@link SimulationCounter#HOST_CHECKSUM_MISMATCHES} */
  public long hostChecksumMismatches() {
    return counts.get(SimulationCounter.HOST_CHECKSUM_MISMATCHES);
  }

  /** @return {@link SimulationCounter#KV_MISMATCHES} */
  public long kvMismatches() {
    return counts.get(SimulationCounter.KV_MISMATCHES);
  }

  /** @return {@link SimulationCounter#SNAPSHOTS_VERIFIED} */
  public long snapshotsVerified() {
    return counts.get(SimulationCounter.SNAPSHOTS_VERIFIED);
  }

  /** @return {@link SimulationCounter#SNAPSHOT_MISMATCHES} */
  public long snapshotMismatches() {
    return counts.get(SimulationCounter.SNAPSHOT_MISMATCHES);
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
        && desyncs() == 0
        && leakedPages() == 0
        && kvMismatches() == 0
        && snapshotMismatches() == 0;
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
   * @return {@code computedTokens() - prefillTokens()}
   */
  public long decodeTokens() {
    return computedTokens() - prefillTokens();
  }

  /**
   * Prompt tokens that were neither reused nor computed: those of requests aborted (or stopped
   * by a failure) before their prefill ended. Reused are the usable hit tokens: a matched token
   * past a request's usable length is computed again, so it counts among {@code prefillTokens()}.
   *
   * @return tokens
   */
  public long unreachedPromptTokens() {
    return promptTokens() - usableHitTokens.total() - prefillTokens();
  }

  /**
   * Collective calls per tick.
   *
   * @return the mean, 0 if no tick ran
   */
  public double collectivesPerTick() {
    return ticks() == 0 ? 0 : (double) collectives.calls() / ticks();
  }

  /**
   * This result with {@code wallSeconds} zeroed, to compare runs.
   *
   * @return a copy
   */
  public SimulationResult withoutWallTime() {
    return toBuilder().wallSeconds(0).build();
  }

  /**
   * A builder with every counter 0, no failure, equal digests and no snapshots (the usable hit
   * tokens are the hit tokens unless set).
   *
   * @return a builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A builder that starts from this result.
   *
   * @return a builder
   */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.workload = workload;
    b.seed = seed;
    b.ranks = ranks;
    b.counts = counts.toBuilder();
    b.hitTokens = hitTokens;
    b.usableHitTokens = usableHitTokens;
    b.collectives = collectives;
    b.cache = cache;
    b.replicaDigestsEqual = replicaDigestsEqual;
    b.failure = failure;
    b.failureTick = failureTick;
    b.failureMessage = failureMessage;
    b.wallSeconds = wallSeconds;
    b.timeline = timeline;
    b.replicaDigest = replicaDigest;
    return b;
  }

  /** Sets a result's fields by name. */
  public static final class Builder {
    private String workload;
    private long seed;
    private int ranks = 1;
    private SimulationCounts.Builder counts = SimulationCounts.builder();
    private HitTokens hitTokens = new HitTokens(0, 0, 0);
    private HitTokens usableHitTokens;
    private CollectiveCounts collectives = new CollectiveCounts(0, 0, 0, 0, 0, 0, 0);
    private CacheStats cache = CacheStats.NONE;
    private boolean replicaDigestsEqual = true;
    private SimulationFailure failure = SimulationFailure.NONE;
    private long failureTick = -1;
    private String failureMessage = "";
    private double wallSeconds;
    private SimulationTimeline timeline;
    private long replicaDigest;

    private Builder() {}

    /**
     * @param workload the workload spec
     * @return this
     */
    public Builder workload(String workload) {
      this.workload = workload;
      return this;
    }

    /**
     * @param seed the seed
     * @return this
     */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /**
     * @param ranks the number of ranks
     * @return this
     */
    public Builder ranks(int ranks) {
      this.ranks = ranks;
      return this;
    }

    /**
     * Sets one counter.
     *
     * @param counter which
     * @param value its value
     * @return this
     */
    public Builder set(SimulationCounter counter, long value) {
      counts.set(counter, value);
      return this;
    }

    /**
     * @param hitTokens prompt tokens reused, per tier
     * @return this
     */
    public Builder hitTokens(HitTokens hitTokens) {
      this.hitTokens = hitTokens;
      return this;
    }

    /**
     * @param usableHitTokens the usable part of the hit tokens, per tier
     * @return this
     */
    public Builder usableHitTokens(HitTokens usableHitTokens) {
      this.usableHitTokens = usableHitTokens;
      return this;
    }

    /**
     * @param collectives the collective calls
     * @return this
     */
    public Builder collectives(CollectiveCounts collectives) {
      this.collectives = collectives;
      return this;
    }

    /**
     * @param cache the cache's counters
     * @return this
     */
    public Builder cache(CacheStats cache) {
      this.cache = cache;
      return this;
    }

    /**
     * @param replicaDigestsEqual whether the digests were equal
     * @return this
     */
    public Builder replicaDigestsEqual(boolean replicaDigestsEqual) {
      this.replicaDigestsEqual = replicaDigestsEqual;
      return this;
    }

    /**
     * Sets what stopped the run.
     *
     * @param failure the failure
     * @param tick its tick, -1 if none
     * @param message its message, empty if none
     * @return this
     */
    public Builder failure(SimulationFailure failure, long tick, String message) {
      this.failure = failure;
      this.failureTick = tick;
      this.failureMessage = message;
      return this;
    }

    /**
     * @param wallSeconds the wall-clock time
     * @return this
     */
    public Builder wallSeconds(double wallSeconds) {
      this.wallSeconds = wallSeconds;
      return this;
    }

    /**
     * @param timeline the timeline
     * @return this
     */
    public Builder timeline(SimulationTimeline timeline) {
      this.timeline = timeline;
      return this;
    }

    /**
     * @param replicaDigest the final replica digest
     * @return this
     */
    public Builder replicaDigest(long replicaDigest) {
      this.replicaDigest = replicaDigest;
      return this;
    }

    /**
     * The result.
     *
     * @return the result
     * @throws NullPointerException if the workload or the timeline was not set
     */
    public SimulationResult build() {
      return new SimulationResult(
          workload,
          seed,
          ranks,
          counts.build(),
          hitTokens,
          usableHitTokens == null ? hitTokens : usableHitTokens,
          collectives,
          cache,
          replicaDigestsEqual,
          failure,
          failureTick,
          failureMessage,
          wallSeconds,
          timeline,
          replicaDigest);
    }
  }
}
