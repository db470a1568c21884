package io.kvtier.simulator;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.LoadFailurePolicy;
import io.kvtier.core.rank.ProtocolDefect;
import io.kvtier.core.rank.RankEngineConfig;
import java.time.Duration;
import java.util.Map;

/**
 * Builds a {@link SimulationConfig}; the defaults are those of {@code kvtier simulate} without
 * arguments: 4 ranks on the {@code sim} backend, small multi-turn chats, 16-token pages, 192
 * device pages per rank, a host tier twice as large, write-through, LRU, uniform copy delays, no
 * failures, 1% aborts per tick, 64-token prefill chunks, 8 running requests, a digest check
 * every tick, 600 ticks, seed 1, the {@code local} collective without properties, no injected
 * failure.
 */
public final class SimulationConfigBuilder {
  private int ranks = 4;
  private String device = "sim";
  private String workload = SimulationConfig.DEFAULT_WORKLOAD;
  private int requests;
  private int pageSize = 16;
  private int devicePages = 192;
  private double hostRatio = 2.0;
  private WritePolicy writePolicy = WritePolicy.WRITE_THROUGH;
  private EvictionPolicy eviction = EvictionPolicy.LRU;
  private AckDelay ackDelay = AckDelay.UNIFORM;
  private double failureProbability;
  private double flipProbability;
  private double abortProbability = 0.01;
  private int chunkTokens = 64;
  private int maxRunning = 8;
  private int maxPrefillTokens = RankEngineConfig.NO_PREFILL_BUDGET;
  private int arrivalsPerTick = 2;
  private int digestInterval = 1;
  private int ticks = 600;
  private long seed = 1;
  private Duration watchdog = Duration.ofSeconds(30);
  private ProtocolDefect protocolDefect = ProtocolDefect.NONE;
  private CacheDefect cacheDefect = CacheDefect.NONE;
  private L3Simulation l3 = L3Simulation.NONE;
  private String collective = SimulationConfig.LOCAL_COLLECTIVE;
  private Map<String, String> collectiveProperties = Map.of();
  private RankFailureInjection rankFailure = RankFailureInjection.NONE;
  private int fullCheckInterval = SimulationConfig.DEFAULT_FULL_CHECK_INTERVAL;
  private boolean skipIdleTicks = true;
  private java.util.Optional<io.kvtier.core.config.LayerMix> layerMix = java.util.Optional.empty();
  private int snapshotSlots;
  private int snapshotIntervalPages = SimulationConfig.DEFAULT_SNAPSHOT_INTERVAL_PAGES;
  private boolean windowedSwa;
  private LoadFailurePolicy onLoadFailure = LoadFailurePolicy.RECOMPUTE;
  private boolean cacheChunks = true;

  SimulationConfigBuilder() {}

  SimulationConfigBuilder(SimulationConfig c) {
    ranks = c.ranks();
    device = c.device();
    workload = c.workload();
    requests = c.requests();
    pageSize = c.pageSize();
    devicePages = c.devicePages();
    hostRatio = c.hostRatio();
    writePolicy = c.writePolicy();
    eviction = c.eviction();
    ackDelay = c.ackDelay();
    failureProbability = c.failureProbability();
    flipProbability = c.flipProbability();
    abortProbability = c.abortProbability();
    chunkTokens = c.chunkTokens();
    maxRunning = c.maxRunning();
    maxPrefillTokens = c.maxPrefillTokens();
    arrivalsPerTick = c.arrivalsPerTick();
    digestInterval = c.digestInterval();
    ticks = c.ticks();
    seed = c.seed();
    watchdog = c.watchdog();
    protocolDefect = c.protocolDefect();
    cacheDefect = c.cacheDefect();
    l3 = c.l3();
    collective = c.collective();
    collectiveProperties = c.collectiveProperties();
    fullCheckInterval = c.fullCheckInterval();
    skipIdleTicks = c.skipIdleTicks();
    rankFailure = c.rankFailure();
    layerMix = c.layerMix();
    snapshotSlots = c.snapshotSlots();
    snapshotIntervalPages = c.snapshotIntervalPages();
    windowedSwa = c.windowedSwa();
    onLoadFailure = c.onLoadFailure();
    cacheChunks = c.cacheChunks();
  }

  /**
   * Sets ranks, 1 to 8.
   *
   * @param v ranks, 1 to 8
   * @return this
   */
  public SimulationConfigBuilder ranks(int v) {
    ranks = v;
    return this;
  }

  /**
   * Sets the device and host provider.
   *
   * @param v sim, asserting, or another provider name
   * @return this
   */
  public SimulationConfigBuilder device(String v) {
    device = v;
    return this;
  }

  /**
   * Sets a workload spec.
   *
   * @param v a workload spec
   * @return this
   */
  public SimulationConfigBuilder workload(String v) {
    workload = v;
    return this;
  }

  /**
   * Sets the most requests, 0 for all.
   *
   * @param v the most requests, 0 for all
   * @return this
   */
  public SimulationConfigBuilder requests(int v) {
    requests = v;
    return this;
  }

  /**
   * Sets tokens per page.
   *
   * @param v tokens per page
   * @return this
   */
  public SimulationConfigBuilder pageSize(int v) {
    pageSize = v;
    return this;
  }

  /**
   * Sets device pages per rank.
   *
   * @param v device pages per rank
   * @return this
   */
  public SimulationConfigBuilder devicePages(int v) {
    devicePages = v;
    return this;
  }

  /**
   * Sets host/device ratio above 1, or 0.
   *
   * @param v host/device ratio above 1, or 0
   * @return this
   */
  public SimulationConfigBuilder hostRatio(double v) {
    hostRatio = v;
    return this;
  }

  /**
   * Sets the write policy.
   *
   * @param v the write policy
   * @return this
   */
  public SimulationConfigBuilder writePolicy(WritePolicy v) {
    writePolicy = v;
    return this;
  }

  /**
   * Sets the eviction policy.
   *
   * @param v the eviction policy
   * @return this
   */
  public SimulationConfigBuilder eviction(EvictionPolicy v) {
    eviction = v;
    return this;
  }

  /**
   * Sets the copy delay distribution.
   *
   * @param v the copy delay distribution
   * @return this
   */
  public SimulationConfigBuilder ackDelay(AckDelay v) {
    ackDelay = v;
    return this;
  }

  /**
   * Sets chance that a copy batch fails.
   *
   * @param v chance that a copy batch fails
   * @return this
   */
  public SimulationConfigBuilder failureProbability(double v) {
    failureProbability = v;
    return this;
  }

  /**
   * Sets the chance that a host-to-device batch finds a bit of its source flipped.
   *
   * @param v 0 to 1
   * @return this
   */
  public SimulationConfigBuilder flipProbability(double v) {
    flipProbability = v;
    return this;
  }

  /**
   * Sets chance per tick of one abort.
   *
   * @param v chance per tick of one abort
   * @return this
   */
  public SimulationConfigBuilder abortProbability(double v) {
    abortProbability = v;
    return this;
  }

  /**
   * Sets prefill tokens per tick.
   *
   * @param v prefill tokens per tick
   * @return this
   */
  public SimulationConfigBuilder chunkTokens(int v) {
    chunkTokens = v;
    return this;
  }

  /**
   * Sets the prompt tokens all running requests together prefill per tick.
   *
   * @param v at least 1; {@link RankEngineConfig#NO_PREFILL_BUDGET} for no budget (the default)
   * @return this
   */
  public SimulationConfigBuilder maxPrefillTokens(int v) {
    maxPrefillTokens = v;
    return this;
  }

  /**
   * Sets requests running at once.
   *
   * @param v requests running at once
   * @return this
   */
  public SimulationConfigBuilder maxRunning(int v) {
    maxRunning = v;
    return this;
  }

  /**
   * Sets arrivals per tick.
   *
   * @param v arrivals per tick
   * @return this
   */
  public SimulationConfigBuilder arrivalsPerTick(int v) {
    arrivalsPerTick = v;
    return this;
  }

  /**
   * Sets ticks between in-band digest checks, 0 for none.
   *
   * @param v ticks between in-band digest checks, 0 for none
   * @return this
   */
  public SimulationConfigBuilder digestInterval(int v) {
    digestInterval = v;
    return this;
  }

  /**
   * Sets ticks with arrivals.
   *
   * @param v ticks with arrivals
   * @return this
   */
  public SimulationConfigBuilder ticks(int v) {
    ticks = v;
    return this;
  }

  /**
   * Sets the seed.
   *
   * @param v the seed
   * @return this
   */
  public SimulationConfigBuilder seed(long v) {
    seed = v;
    return this;
  }

  /**
   * Sets the collective watchdog.
   *
   * @param v the collective watchdog
   * @return this
   */
  public SimulationConfigBuilder watchdog(Duration v) {
    watchdog = v;
    return this;
  }

  /**
   * Sets a protocol defect, for tests.
   *
   * @param v a protocol defect, for tests
   * @return this
   */
  public SimulationConfigBuilder protocolDefect(ProtocolDefect v) {
    protocolDefect = v;
    return this;
  }

  /**
   * Sets a cache defect, for tests.
   *
   * @param v a cache defect, for tests
   * @return this
   */
  public SimulationConfigBuilder cacheDefect(CacheDefect v) {
    cacheDefect = v;
    return this;
  }

  /**
   * Sets the collective provider that joins the ranks.
   *
   * @param v local (ranks as threads), or a provider of ranks in separate processes such as mpi
   *     or hazelcast
   * @return this
   */
  public SimulationConfigBuilder collective(String v) {
    collective = v;
    return this;
  }

  /**
   * Sets the collective provider's settings, replacing any set before.
   *
   * @param v full keys (such as hazelcast.port) to values
   * @return this
   */
  public SimulationConfigBuilder collectiveProperties(Map<String, String> v) {
    collectiveProperties = v;
    return this;
  }

  /**
   * Sets the L3 tier.
   *
   * @param v the store and its settings, {@link L3Simulation#NONE} for none
   * @return this
   */
  public SimulationConfigBuilder l3(L3Simulation v) {
    l3 = java.util.Objects.requireNonNull(v, "l3");
    return this;
  }

  /**
   * Sets a failure injected into one rank's step.
   *
   * @param v the rank, tick, step and kind; {@link RankFailureInjection#NONE} for none
   * @return this
   */
  public SimulationConfigBuilder rankFailure(RankFailureInjection v) {
    rankFailure = java.util.Objects.requireNonNull(v, "rankFailure");
    return this;
  }

  /**
   * Sets every how many ticks the full invariant check runs (1 for every tick).
   *
   * @param v ticks, at least 1
   * @return this
   */
  public SimulationConfigBuilder fullCheckInterval(int v) {
    fullCheckInterval = v;
    return this;
  }

  /**
   * Sets whether rank 0 skips idle ticks.
   *
   * @param v true to skip ticks in which nothing is outstanding and nothing arrives
   * @return this
   */
  public SimulationConfigBuilder skipIdleTicks(boolean v) {
    skipIdleTicks = v;
    return this;
  }

  /**
   * Sets the model's layer mix (docs/HYBRID.md): what {@code kvtier simulate --layer-mix} parsed.
   * A mix of full-attention layers only is the default, all full attention.
   *
   * @param mix the layer kinds, in layer order
   * @return this builder
   */
  public SimulationConfigBuilder layerMix(io.kvtier.core.config.LayerMix mix) {
    java.util.Objects.requireNonNull(mix, "mix");
    layerMix = mix.allFull() ? java.util.Optional.empty() : java.util.Optional.of(mix);
    return this;
  }

  /**
   * Sets recurrent-state snapshots: {@code slots} page slots per snapshot (0 for none), one every
   * {@code intervalPages} pages.
   *
   * @param slots page slots of one snapshot, 0 for a model without recurrent layers
   * @param intervalPages pages between two interval snapshots, at least 1
   * @return this
   */
  public SimulationConfigBuilder snapshots(int slots, int intervalPages) {
    snapshotSlots = slots;
    snapshotIntervalPages = intervalPages;
    return this;
  }

  /**
   * Sets whether the mix's SWA layers keep windows in the snapshots instead of every page
   * ({@code --swa-cache windows}; {@link SimulationConfig#windowedSwa()}).
   *
   * @param v true for windows
   * @return this
   */
  public SimulationConfigBuilder windowedSwa(boolean v) {
    windowedSwa = v;
    return this;
  }

  /**
   * Sets what a request whose load-back failed does ({@code --on-load-failure}).
   *
   * @param v recompute (the default) or fail
   * @return this
   */
  public SimulationConfigBuilder onLoadFailure(LoadFailurePolicy v) {
    onLoadFailure = v;
    return this;
  }

  /**
   * Sets whether a request's prompt pages join the cache after each prefill step, with requests
   * that share a running prompt waiting for its step (the default), or only when it finishes
   * ({@code --insert-at-finish}; {@link SimulationConfig#cacheChunks()}).
   *
   * @param v true for after each prefill step
   * @return this
   */
  public SimulationConfigBuilder cacheChunks(boolean v) {
    cacheChunks = v;
    return this;
  }

  /**
   * The config.
   *
   * @return the validated config
   * @throws IllegalArgumentException naming a bad field and its value
   */
  public SimulationConfig build() {
    return new SimulationConfig(
        ranks,
        device,
        workload,
        requests,
        pageSize,
        devicePages,
        hostRatio,
        writePolicy,
        eviction,
        ackDelay,
        failureProbability,
        flipProbability,
        abortProbability,
        chunkTokens,
        maxRunning,
        maxPrefillTokens,
        arrivalsPerTick,
        digestInterval,
        ticks,
        seed,
        watchdog,
        protocolDefect,
        cacheDefect,
        collective,
        collectiveProperties,
        l3,
        rankFailure,
        fullCheckInterval,
        skipIdleTicks,
        layerMix,
        snapshotSlots,
        snapshotIntervalPages,
        windowedSwa,
        onLoadFailure,
        cacheChunks);
  }
}
