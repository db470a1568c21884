package io.kvtier.serving;

import io.kvtier.core.cache.CacheStats;
import io.kvtier.core.cache.L3Stats;
import io.kvtier.core.cache.PoolUsage;
import io.kvtier.core.rank.SpeculationStats;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import java.util.Optional;

/**
 * Running totals of a {@link GenerationEngine}, readable from any thread (a metrics scrape) while
 * the engine's thread updates them: one writer, volatile fields, so a reader sees each value whole
 * but not a consistent set of them. Pool usage and cache counters are rank 0's: every rank's
 * replica makes the same decisions, over its own shard of the KV heads.
 */
public final class EngineStats {
  private volatile long requests;
  private volatile long promptTokens;
  private volatile long deviceHitTokens;
  private volatile long hostHitTokens;
  private volatile long l3HitTokens;
  private volatile long usableTokens;
  private volatile long computedTokens;
  private volatile long generatedTokens;
  private volatile long loadFailures;
  private volatile long poolExhausted;
  private volatile PoolUsage device;
  private volatile PoolUsage host;
  private volatile CacheStats cache;
  private volatile L3Stats l3;
  private volatile long checkedHostBlocks;
  private volatile long hostChecksumMismatches;
  private volatile long loadFailureRecomputes;
  private volatile long loadFailureLostTokens;
  private volatile long ticks;
  private volatile long batchedTicks;
  private volatile long maxBatch;
  private volatile long advancedSteps;
  private volatile int running;
  private volatile int waiting;
  private volatile boolean idle;
  private final int ranks;
  private final boolean speculative;
  private volatile SpeculationStats speculation = NO_SPECULATION;

  private static final SpeculationStats NO_SPECULATION =
      new SpeculationStats(
          new long[SpeculationStats.Tier.values().length],
          new long[SpeculationStats.Tier.values().length],
          new long[SpeculationStats.Tier.values().length]);
  // Read on the reader's thread (stores are thread-safe): a remote store's stats may cost a
  // round trip that the engine's thread should not pay per request.
  private final Optional<KvStore> store;

  EngineStats(
      PoolUsage device,
      PoolUsage host,
      CacheStats cache,
      L3Stats l3,
      Optional<KvStore> store,
      int ranks,
      boolean speculative) {
    this.speculative = speculative;
    this.ranks = ranks;
    this.device = device;
    this.host = host;
    this.cache = cache;
    this.l3 = l3;
    this.store = store;
  }

  // The engine's thread is the only writer, so read-modify-write of a volatile is safe here.
  void recordCompletion(int prompt, Completion completion) {
    requests++;
    promptTokens += prompt;
    deviceHitTokens += completion.deviceHitTokens();
    hostHitTokens += completion.hostHitTokens();
    l3HitTokens += completion.l3HitTokens();
    usableTokens += completion.cachedTokens();
    computedTokens += prompt - completion.cachedTokens();
    generatedTokens += completion.tokens().length;
  }

  /**
   * One tick of the engine ended.
   *
   * @param advanced requests the model advanced in the tick (a prefill chunk or a decode token)
   * @param runningNow requests running after the tick
   * @param waitingNow requests submitted and not yet admitted
   */
  void recordTick(int advanced, int runningNow, int waitingNow) {
    ticks++;
    advancedSteps += advanced;
    if (advanced > 1) {
      batchedTicks++;
    }
    if (advanced > maxBatch) {
      maxBatch = advanced;
    }
    running = runningNow;
    waiting = waitingNow;
  }

  void recordSpeculation(SpeculationStats counts) {
    speculation = counts;
  }

  /**
   * Whether the model decodes speculatively ({@link
   * io.kvtier.core.rank.ModelRunner#speculativeTokens}): the speculation meters are bound then.
   *
   * @return whether it has a draft
   */
  public boolean speculative() {
    return speculative;
  }

  /**
   * Speculative decoding's counts, rank 0's (replicated), per tier a request's prefix came from:
   * proposed, accepted, verification steps.
   *
   * @return the counts; all zero without a draft
   */
  public SpeculationStats speculation() {
    return speculation;
  }

  void recordIdle(boolean parked) {
    idle = parked;
  }

  void recordLoadFailure() {
    loadFailures++;
  }

  void recordPoolExhausted() {
    poolExhausted++;
  }

  void recordUsage(
      PoolUsage deviceUsage,
      PoolUsage hostUsage,
      CacheStats cacheStats,
      L3Stats l3Stats,
      long checkedBlocks,
      long checksumMismatches,
      long recomputes,
      long lostTokens) {
    loadFailureRecomputes = recomputes;
    loadFailureLostTokens = lostTokens;
    checkedHostBlocks = checkedBlocks;
    hostChecksumMismatches = checksumMismatches;
    device = deviceUsage;
    host = hostUsage;
    cache = cacheStats;
    l3 = l3Stats;
  }

  /**
   * Requests completed.
   *
   * @return the count
   */
  public long requests() {
    return requests;
  }

  /**
   * Prompt tokens of completed requests.
   *
   * @return the count
   */
  public long promptTokens() {
    return promptTokens;
  }

  /**
   * Prompt tokens whose KV was already on the device (L1 hits).
   *
   * @return the count
   */
  public long deviceHitTokens() {
    return deviceHitTokens;
  }

  /**
   * Prompt tokens whose KV was loaded back from the host tier (L2 hits), L3 hits excluded.
   *
   * @return the count
   */
  public long hostHitTokens() {
    return hostHitTokens;
  }

  /**
   * Prompt tokens whose KV an L3 prefetch fetched from the store for the request (L3 hits): not in
   * {@link #hostHitTokens()}, though they reach the device as a load-back from the host tier.
   *
   * @return the count, 0 without an L3 tier
   */
  public long l3HitTokens() {
    return l3HitTokens;
  }

  /**
   * Prompt tokens the cache matched in any tier: {@code deviceHitTokens() + hostHitTokens() +
   * l3HitTokens()}.
   *
   * @return the count
   */
  public long matchedTokens() {
    return deviceHitTokens + hostHitTokens + l3HitTokens;
  }

  /**
   * Prompt tokens of the match that the model resumed from and did not compute; below {@link
   * #matchedTokens()} where the layer mix cannot resume from all of a matched prefix (with
   * recurrent layers: from its deepest recurrent-state snapshot, docs/HYBRID.md §5), so that a
   * low usable hit rate is visible.
   *
   * @return the count
   */
  public long usableTokens() {
    return usableTokens;
  }

  /**
   * Prompt tokens the model computed (misses in every tier, and matched tokens it could not
   * resume from).
   *
   * @return the count
   */
  public long computedTokens() {
    return computedTokens;
  }

  /**
   * Tokens generated.
   *
   * @return the count
   */
  public long generatedTokens() {
    return generatedTokens;
  }

  /**
   * Requests the engine ended because a load-back of their cached prefix failed (only under
   * {@code --on-load-failure fail}; the client may send the request again).
   *
   * @return the count
   */
  public long loadFailures() {
    return loadFailures;
  }

  /**
   * Times a request whose load-back failed went back to the queue to be recomputed (the default
   * policy): the client waited longer and got the same answer.
   *
   * @return the count
   */
  public long loadFailureRecomputes() {
    return loadFailureRecomputes;
  }

  /**
   * The prompt tokens those failed load-backs were to bring back from the host, recomputed (or
   * fetched from L3) instead.
   *
   * @return tokens
   */
  public long loadFailureLostTokens() {
    return loadFailureLostTokens;
  }

  /**
   * Requests the engine rejected because their pages could not be allocated even with nothing
   * else running or outstanding.
   *
   * @return the count
   */
  public long poolExhausted() {
    return poolExhausted;
  }

  /**
   * The device pool's accounting after the last request or sync.
   *
   * @return the usage
   */
  public PoolUsage deviceUsage() {
    return device;
  }

  /**
   * The host pool's accounting after the last request or sync.
   *
   * @return the usage
   */
  public PoolUsage hostUsage() {
    return host;
  }

  /**
   * The cache's replicated counters (evictions, backups, load-backs) after the last request or
   * sync.
   *
   * @return the counters
   */
  public CacheStats cacheStats() {
    return cache;
  }

  /**
   * Host blocks (page, layer) whose CRC32C the serving rank checked before a load-back or an L3
   * write read them (docs/CACHE.md, "Verified restores"). Rank-local: the serving rank's own.
   *
   * @return the count
   */
  public long checkedHostBlocks() {
    return checkedHostBlocks;
  }

  /**
   * Checked host blocks whose bytes no longer matched their CRC32C on the serving rank: each
   * failed its load-back (the request is then recomputed or fails, as the engine decides) or its
   * L3 write. Rank-local.
   *
   * @return the count
   */
  public long hostChecksumMismatches() {
    return hostChecksumMismatches;
  }

  /**
   * The cache's replicated L3 counters (writes, prefetches, pages fetched and missed) after the
   * last request or sync.
   *
   * @return the counters; {@link L3Stats#NONE} without an L3 tier
   */
  public L3Stats l3Stats() {
    return l3;
  }

  /**
   * Whether the engine has an L3 store.
   *
   * @return true if {@link #storeStats()} is present
   */
  public boolean hasL3() {
    return store.isPresent();
  }

  /**
   * The L3 store's own counters (pages read and missed, puts, evictions, bytes held), read from
   * the store now, on the caller's thread.
   *
   * @return the counters, or empty without an L3 store
   */
  public Optional<KvStoreStats> storeStats() {
    return store.map(KvStore::stats);
  }

  /**
   * Ticks of the rank loop so far, idle ones included.
   *
   * @return the count
   */
  public long ticks() {
    return ticks;
  }

  /**
   * Ticks in which the model advanced more than one request: continuous batching at work.
   *
   * @return the count
   */
  public long batchedTicks() {
    return batchedTicks;
  }

  /**
   * The most requests the model advanced in one tick (at most {@code --max-running}).
   *
   * @return the count
   */
  public long maxBatch() {
    return maxBatch;
  }

  /**
   * Request steps the model ran (a prefill chunk or a decode token each), over every tick.
   *
   * @return the count
   */
  public long advancedSteps() {
    return advancedSteps;
  }

  /**
   * Requests running (admitted, not ended) after the last tick.
   *
   * @return the count
   */
  public int running() {
    return running;
  }

  /**
   * Requests submitted and not yet admitted after the last tick.
   *
   * @return the count
   */
  public int waiting() {
    return waiting;
  }

  /**
   * Whether the group is idle: rank 0's thread is parked until work arrives, and the group makes
   * no collective call (the other ranks wait in {@code Collective.awaitBroadcast}).
   *
   * @return true while parked
   */
  public boolean idle() {
    return idle;
  }

  /**
   * The ranks of the group that serves.
   *
   * @return the world size
   */
  public int ranks() {
    return ranks;
  }
}
