package io.kvtier.core.rank;

import java.util.Objects;

/**
 * The scheduling settings of a {@link RankEngine}; every rank of a group must use equal ones.
 *
 * @param chunkTokens the most prompt tokens a request prefills per tick (chunked prefill), at
 *     least 1
 * @param maxRunning the most requests running at once, at least 1
 * @param maxPrefillTokens the most prompt tokens all running requests together prefill in one
 *     tick, at least 1 (compare SGLang's {@code --max-prefill-tokens}, vLLM's {@code
 *     max_num_batched_tokens}); {@link #NO_PREFILL_BUDGET} (the default) for no budget beyond
 *     each request's chunk. The running requests take it in admission order, each at most {@code
 *     chunkTokens}; one left without any waits for the next tick, and so does a prepared backup's
 *     whole-prompt step that the rest would split. Decode steps are not counted: a tick of long
 *     prefill chunks delays every decode in it, which is what the budget bounds (docs/SERVE.md,
 *     "The prefill budget")
 * @param digestInterval ticks between replica digest checks (step 6); 0 turns the check off.
 *     On by default ({@value #DEFAULT_DIGEST_INTERVAL}): a check is one 2-element reduction and a
 *     hash of the replicated state, about 1/64 more collective calls per tick and no difference
 *     in ticks per second the simulator benchmark can resolve (docs/PERFORMANCE.md)
 * @param loadBackQuotaPages the most pages one admission loads back from the host, 0 for none
 * @param preparedBackups whether a request whose whole prompt is prefilled in one tick reserves
 *     a prepared backup and streams each layer to the host as it is computed (CACHE.md §11)
 * @param cacheChunks whether a prefill inserts its computed pages into the cache after each step,
 *     its last included (a prepared backup attaches there), so that requests that come while it
 *     runs and decodes share them (SGLang's {@code cache_unfinished_req}; vLLM caches a block
 *     once it is full), rather than only when it finishes (on by default); with it, a waiting
 *     request that shares 32 tokens or more with a running request's uncomputed prompt waits
 *     for that one's step and matches them (docs/CACHE.md §3)
 * @param guardCollective wrap the collective in a {@link GuardedCollective} (one extra 4-element
 *     reduction per call) for providers that do not check tags and sequence numbers themselves;
 *     the {@code local} provider does, so the simulator turns this off
 * @param verifyByRecompute whether a request whose prefix came (partly) back from the host
 *     recomputes that prefix before it runs and compares the K/V bit for bit ({@link
 *     ModelRunner#verifyPrefix}, counted in {@link RankEngineStats#kvVerifiedPages()}): a debug
 *     check that costs the whole prefill the hit saved. Host pages are checked by CRC32C on
 *     every restore whatever this says (docs/CACHE.md, "Verified restores"); on by default, which
 *     the simulator keeps, and {@code kvtier serve} turns off unless asked
 * @param onLoadFailure what a request whose load-back failed does: recompute (the default) or
 *     fail ({@link LoadFailurePolicy})
 * @param defect a deliberate protocol defect, for tests; {@link ProtocolDefect#NONE} otherwise
 */
public record RankEngineConfig(
    int chunkTokens,
    int maxRunning,
    int maxPrefillTokens,
    int digestInterval,
    int loadBackQuotaPages,
    boolean preparedBackups,
    boolean cacheChunks,
    boolean guardCollective,
    boolean verifyByRecompute,
    LoadFailurePolicy onLoadFailure,
    ProtocolDefect defect) {

  /** Default of {@link #chunkTokens()}. */
  public static final int DEFAULT_CHUNK_TOKENS = 512;

  /** Default of {@link #maxRunning()}. */
  public static final int DEFAULT_MAX_RUNNING = 16;

  /** {@link #maxPrefillTokens()} of no budget: each running request prefills its chunk. */
  public static final int NO_PREFILL_BUDGET = Integer.MAX_VALUE;

  /** Default of {@link #maxPrefillTokens()}: no budget. */
  public static final int DEFAULT_MAX_PREFILL_TOKENS = NO_PREFILL_BUDGET;

  /** Default of {@link #digestInterval()}: a digest check every 64 ticks. */
  public static final int DEFAULT_DIGEST_INTERVAL = 64;

  /**
   * Chunks of 512 tokens, 16 running, a digest check every 64 ticks, any load-back, prepared
   * backups, prefill pages inserted after each step, guarded, restores verified by recompute, a
   * failed load-back recomputed.
   */
  public static final RankEngineConfig DEFAULTS =
      new RankEngineConfig(
          DEFAULT_CHUNK_TOKENS,
          DEFAULT_MAX_RUNNING,
          DEFAULT_MAX_PREFILL_TOKENS,
          DEFAULT_DIGEST_INTERVAL,
          Integer.MAX_VALUE,
          true,
          true,
          true,
          true,
          LoadFailurePolicy.RECOMPUTE,
          ProtocolDefect.NONE);

  /** Validates the fields. */
  public RankEngineConfig {
    atLeast("chunkTokens", chunkTokens, 1);
    atLeast("maxRunning", maxRunning, 1);
    atLeast("maxPrefillTokens", maxPrefillTokens, 1);
    atLeast("digestInterval", digestInterval, 0);
    atLeast("loadBackQuotaPages", loadBackQuotaPages, 0);
    Objects.requireNonNull(onLoadFailure, "onLoadFailure");
    Objects.requireNonNull(defect, "defect");
  }

  private static void atLeast(String name, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException(name + "=" + value + " must be >= " + min);
    }
  }

  /**
   * With another prefill chunk size.
   *
   * @param tokens tokens per tick, at least 1
   * @return a copy
   */
  public RankEngineConfig withChunkTokens(int tokens) {
    return new RankEngineConfig(
        tokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With another limit of running requests.
   *
   * @param requests at least 1
   * @return a copy
   */
  public RankEngineConfig withMaxRunning(int requests) {
    return new RankEngineConfig(
        chunkTokens,
        requests,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With another per-tick prefill budget.
   *
   * @param tokens prompt tokens of all requests together per tick, at least 1; {@link
   *     #NO_PREFILL_BUDGET} for none
   * @return a copy
   */
  public RankEngineConfig withMaxPrefillTokens(int tokens) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        tokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With another digest interval.
   *
   * @param ticks ticks between checks, 0 for none
   * @return a copy
   */
  public RankEngineConfig withDigestInterval(int ticks) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        ticks,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With another load-back quota.
   *
   * @param pages pages, 0 to disable load-back
   * @return a copy
   */
  public RankEngineConfig withLoadBackQuotaPages(int pages) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        pages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With prepared backups on or off.
   *
   * @param enabled whether single-chunk prefills stream a prepared backup
   * @return a copy
   */
  public RankEngineConfig withPreparedBackups(boolean enabled) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        enabled,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With prefill pages inserted after each prefill step, or only at finish.
   *
   * @param enabled whether each prefill step inserts its computed pages
   * @return a copy
   */
  public RankEngineConfig withCacheChunks(boolean enabled) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        enabled,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With the collective guard on or off.
   *
   * @param enabled whether to wrap the collective in a {@link GuardedCollective}
   * @return a copy
   */
  public RankEngineConfig withGuardCollective(boolean enabled) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        enabled,
        verifyByRecompute,
        onLoadFailure,
        defect);
  }

  /**
   * With the recompute check of restored prefixes on or off.
   *
   * @param enabled whether a restored prefix is recomputed and compared before its request runs
   * @return a copy
   */
  public RankEngineConfig withVerifyByRecompute(boolean enabled) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        enabled,
        onLoadFailure,
        defect);
  }

  /**
   * With another policy for a failed load-back.
   *
   * @param policy recompute or fail
   * @return a copy
   */
  public RankEngineConfig withOnLoadFailure(LoadFailurePolicy policy) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        policy,
        defect);
  }

  /**
   * With a deliberate protocol defect, for tests.
   *
   * @param injected the defect
   * @return a copy
   */
  public RankEngineConfig withDefect(ProtocolDefect injected) {
    return new RankEngineConfig(
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        digestInterval,
        loadBackQuotaPages,
        preparedBackups,
        cacheChunks,
        guardCollective,
        verifyByRecompute,
        onLoadFailure,
        injected);
  }
}
