package io.kvtier.serving;

import io.kvtier.core.rank.LoadFailurePolicy;
import io.kvtier.core.rank.RankEngineConfig;
import java.time.Duration;
import java.util.Objects;

/**
 * How {@link GenerationEngines} runs the rank group of a server: which ranks this process runs,
 * the scheduling of continuous batching, and the bounds that keep a client from waiting forever.
 * The world size and the collective are the config's ({@code kvtier.ranks}, {@code
 * kvtier.collective}).
 *
 * @param rank this process's rank when every rank is a process of its own ({@code mpi}, {@code
 *     hazelcast}); {@link #ALL_RANKS} to run every rank as a thread of this process ({@code local})
 * @param maxRunning the most requests that advance in one tick (continuous batching), at least 1
 * @param chunkTokens the most prompt tokens one request prefills in one tick, at least 1
 * @param maxPrefillTokens the most prompt tokens all running requests together prefill in one
 *     tick, at least 1, or {@link RankEngineConfig#NO_PREFILL_BUDGET} for no budget ({@link
 *     RankEngineConfig#maxPrefillTokens()})
 * @param queueCapacity the most requests that may wait for admission before {@link
 *     GenerationEngine#submit} refuses one ({@link GenerationEngine.EngineBusyException}), at
 *     least 1
 * @param group the rank group's name, equal on every rank; processes of two servers must differ
 * @param stallTimeout how long the live requests may go without any progress (no admission,
 *     token, end, or change in the outstanding copies) before they are aborted as stuck: only a
 *     stuck copy or a store that never answers takes this long
 * @param prefixCaching whether requests share cached prefixes; off, each request gets a cache
 *     namespace of its own, so nothing is ever reused (the baseline of a benchmark, as vLLM's
 *     {@code --no-enable-prefix-caching})
 * @param verifyByRecompute whether a request whose prefix came back from the host tier recomputes
 *     it first and compares its K/V bit for bit ({@link RankEngineConfig#verifyByRecompute()}):
 *     a debug check that costs the prefill the hit saved. Off by default: every restored host
 *     page is checked by its CRC32C anyway (docs/CACHE.md, "Verified restores")
 * @param onLoadFailure what a request whose load-back failed does: recompute (the default; the
 *     client only waits longer) or fail (the client gets 503 {@code load_failed})
 */
public record EngineSettings(
    int rank,
    int maxRunning,
    int chunkTokens,
    int maxPrefillTokens,
    int queueCapacity,
    String group,
    Duration stallTimeout,
    boolean prefixCaching,
    boolean verifyByRecompute,
    LoadFailurePolicy onLoadFailure) {

  /** {@link #rank()} of a process that runs every rank as a thread. */
  public static final int ALL_RANKS = -1;

  /** The default bound on waiting requests. */
  public static final int DEFAULT_QUEUE_CAPACITY = 64;

  /** The default no-progress bound. */
  public static final Duration DEFAULT_STALL_TIMEOUT = Duration.ofSeconds(30);

  /**
   * Every rank in this process, the rank engine's default batching ({@value
   * RankEngineConfig#DEFAULT_MAX_RUNNING} running, chunks of {@value
   * RankEngineConfig#DEFAULT_CHUNK_TOKENS} tokens), a queue of {@value #DEFAULT_QUEUE_CAPACITY}.
   */
  public static final EngineSettings DEFAULTS =
      new EngineSettings(
          ALL_RANKS,
          RankEngineConfig.DEFAULT_MAX_RUNNING,
          RankEngineConfig.DEFAULT_CHUNK_TOKENS,
          RankEngineConfig.DEFAULT_MAX_PREFILL_TOKENS,
          DEFAULT_QUEUE_CAPACITY,
          "kvtier-serve",
          DEFAULT_STALL_TIMEOUT,
          true,
          false,
          LoadFailurePolicy.RECOMPUTE);

  /** Validates the fields; each message names the field and its value. */
  public EngineSettings {
    if (rank < ALL_RANKS) {
      throw new IllegalArgumentException(
          "rank=" + rank + " must be >= 0, or ALL_RANKS (-1) to run every rank as a thread");
    }
    atLeast("maxRunning", maxRunning);
    atLeast("chunkTokens", chunkTokens);
    atLeast("maxPrefillTokens", maxPrefillTokens);
    atLeast("queueCapacity", queueCapacity);
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(onLoadFailure, "onLoadFailure");
    if (group.isBlank()) {
      throw new IllegalArgumentException("group is blank: give the rank group a name");
    }
    Objects.requireNonNull(stallTimeout, "stallTimeout");
    if (stallTimeout.isNegative() || stallTimeout.isZero()) {
      throw new IllegalArgumentException("stallTimeout=" + stallTimeout + " must be positive");
    }
  }

  private static void atLeast(String name, int value) {
    if (value < 1) {
      throw new IllegalArgumentException(name + "=" + value + " must be >= 1");
    }
  }

  /**
   * These settings for the given rank of a one-rank-per-process group.
   *
   * @param processRank the rank, or {@link #ALL_RANKS}
   * @return a copy
   */
  public EngineSettings withRank(int processRank) {
    return new EngineSettings(
        processRank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        queueCapacity,
        group,
        stallTimeout,
        prefixCaching,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with another batching.
   *
   * @param running the most running requests
   * @param chunk the prefill chunk in tokens
   * @return a copy
   */
  public EngineSettings withBatching(int running, int chunk) {
    return new EngineSettings(
        rank,
        running,
        chunk,
        maxPrefillTokens,
        queueCapacity,
        group,
        stallTimeout,
        prefixCaching,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with another per-tick prefill budget.
   *
   * @param tokens prompt tokens of all running requests together per tick, at least 1, or {@link
   *     RankEngineConfig#NO_PREFILL_BUDGET}
   * @return a copy
   */
  public EngineSettings withMaxPrefillTokens(int tokens) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        tokens,
        queueCapacity,
        group,
        stallTimeout,
        prefixCaching,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with another waiting queue.
   *
   * @param capacity the most waiting requests
   * @return a copy
   */
  public EngineSettings withQueueCapacity(int capacity) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        capacity,
        group,
        stallTimeout,
        prefixCaching,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with another group name.
   *
   * @param name the name
   * @return a copy
   */
  public EngineSettings withGroup(String name) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        queueCapacity,
        name,
        stallTimeout,
        prefixCaching,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with another no-progress bound.
   *
   * @param timeout the bound
   * @return a copy
   */
  public EngineSettings withStallTimeout(Duration timeout) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        queueCapacity,
        group,
        timeout,
        prefixCaching,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with prefix caching on or off.
   *
   * @param enabled whether requests share cached prefixes
   * @return a copy
   */
  public EngineSettings withPrefixCaching(boolean enabled) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        queueCapacity,
        group,
        stallTimeout,
        enabled,
        verifyByRecompute,
        onLoadFailure);
  }

  /**
   * These settings with the recompute check of restored prefixes on or off.
   *
   * @param enabled whether a prefix loaded back from the host is recomputed and compared first
   * @return a copy
   */
  public EngineSettings withVerifyByRecompute(boolean enabled) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        queueCapacity,
        group,
        stallTimeout,
        prefixCaching,
        enabled,
        onLoadFailure);
  }

  /**
   * These settings with another policy for a failed load-back.
   *
   * @param policy recompute or fail
   * @return a copy
   */
  public EngineSettings withOnLoadFailure(LoadFailurePolicy policy) {
    return new EngineSettings(
        rank,
        maxRunning,
        chunkTokens,
        maxPrefillTokens,
        queueCapacity,
        group,
        stallTimeout,
        prefixCaching,
        verifyByRecompute,
        policy);
  }

  /**
   * Whether this process serves HTTP: rank 0, or every rank in this process.
   *
   * @return true unless this process is a follower rank
   */
  public boolean isServingRank() {
    return rank <= 0;
  }

  /**
   * The rank engine's config for a group of {@code ranks}: this batching; with one rank the
   * digest check and the collective guard are off, since there is no other rank to compare.
   *
   * @param ranks the world size
   * @return the config, equal on every rank
   */
  RankEngineConfig engineConfig(int ranks) {
    RankEngineConfig c =
        RankEngineConfig.DEFAULTS
            .withMaxRunning(maxRunning)
            .withChunkTokens(chunkTokens)
            .withMaxPrefillTokens(maxPrefillTokens)
            .withVerifyByRecompute(verifyByRecompute)
            .withOnLoadFailure(onLoadFailure);
    return ranks == 1 ? c.withDigestInterval(0).withGuardCollective(false) : c;
  }
}
