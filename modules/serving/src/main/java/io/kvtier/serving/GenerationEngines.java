package io.kvtier.serving;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.KvLayout;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * Opens the rank group that serves a {@link ServingModel}: the factory of the {@link
 * GenerationEngine} that {@code kvtier serve} runs.
 *
 * <ul>
 *   <li>Every rank a thread ({@link EngineSettings#ALL_RANKS}, the {@code local} collective):
 *       {@link #open} starts {@code kvtier.ranks} rank threads and returns rank 0's engine; the
 *       others follow rank 0's broadcasts until it closes.
 *   <li>One rank per process ({@code mpi}, {@code hazelcast}): rank 0's process calls {@link
 *       #open} and serves; every other process calls {@link #follow}, which returns when rank 0
 *       closed the group, or throws the group's failure. {@link EngineSettings#isServingRank()}
 *       says which.
 * </ul>
 *
 * <p>The config describes the model's whole KV layout ({@code kvtier.kv-heads} the model's
 * heads); each rank's pools hold its shard ({@link ServingModel#rankLayout}): {@code kv-heads /
 * ranks} heads under tensor parallelism, or under context parallelism ({@code kvtier.parallel=cp})
 * every head of {@code 1/ranks} of each page's positions; either way the pools of a rank are
 * {@code ranks} times smaller per page.
 */
public final class GenerationEngines {
  private static final AtomicLong GROUPS = new AtomicLong();

  private GenerationEngines() {}

  /**
   * Opens rank 0 (and, with {@link EngineSettings#ALL_RANKS}, every other rank as a thread) and
   * returns the engine that serves; closing it stops the whole group.
   *
   * @param model the model
   * @param config the pools and policies with the model's KV layout; {@code kvtier.ranks} is the
   *     world size, dividing the model's heads
   * @param settings batching, queue and which rank this process runs ({@link
   *     EngineSettings#isServingRank()} must hold)
   * @param metrics where rank 0's backends report transfers
   * @param wrapCollective applied to each rank's collective handle (to time its calls)
   * @return the engine, ready to take requests
   * @throws IllegalArgumentException if the layout is not the model's, the heads do not split
   *     over the ranks, or this process is not rank 0
   */
  public static GenerationEngine open(
      ServingModel model,
      KvTierConfig config,
      EngineSettings settings,
      BackendMetrics metrics,
      UnaryOperator<Collective> wrapCollective) {
    return open(
        model, config, settings, metrics, RankSlot.Hooks.NONE.withCollective(wrapCollective));
  }

  /**
   * As {@link #open(ServingModel, KvTierConfig, EngineSettings, BackendMetrics,
   * UnaryOperator)}, the collective as it is.
   *
   * @param model the model
   * @param config the pools and policies with the model's KV layout
   * @param settings batching, queue and rank
   * @param metrics where rank 0's backends report transfers
   * @return the engine
   */
  public static GenerationEngine open(
      ServingModel model, KvTierConfig config, EngineSettings settings, BackendMetrics metrics) {
    return open(model, config, settings, metrics, RankSlot.Hooks.NONE);
  }

  /** As above, with test hooks (L3 executor and store, a failing rank's runner). */
  static RankGroupEngine open(
      ServingModel model,
      KvTierConfig config,
      EngineSettings given,
      BackendMetrics metrics,
      RankSlot.Hooks hooks) {
    Objects.requireNonNull(given, "settings");
    // Ranks as threads join an in-process registry of groups: a name of their own per engine, so
    // that two engines of one JVM (tests, a restart) never meet in one group.
    EngineSettings settings =
        given.rank() == EngineSettings.ALL_RANKS
            ? given.withGroup(given.group() + "-" + GROUPS.incrementAndGet())
            : given;
    Objects.requireNonNull(metrics, "metrics");
    Objects.requireNonNull(hooks, "hooks");
    if (!settings.isServingRank()) {
      throw new IllegalArgumentException(
          "rank "
              + settings.rank()
              + " does not serve: only rank 0 opens the engine; call GenerationEngines.follow on"
              + " the other ranks");
    }
    KvTierConfig shard = shardConfig(model, config);
    int ranks = shard.ranks();
    RankEngineConfig engineConfig = settings.engineConfig(ranks);
    RankGroupEngine engine = new RankGroupEngine(model, settings, ranks);
    boolean threads = settings.rank() == EngineSettings.ALL_RANKS;
    for (int r = 1; threads && r < ranks; r++) {
      int rank = r;
      engine.addFollower(
          Thread.ofPlatform()
              .name("kvtier-rank-" + rank)
              .unstarted(
                  () -> {
                    try {
                      runFollower(
                          model, shard, rank, settings, engineConfig, BackendMetrics.NOOP, hooks);
                    } catch (RuntimeException | Error e) {
                      // Rank 0 raises the group's failure at its next collective and reports it.
                      System.getLogger(GenerationEngines.class.getName())
                          .log(
                              System.Logger.Level.DEBUG,
                              "rank " + rank + " stopped: " + e.getMessage());
                    }
                  }));
    }
    Thread.ofPlatform()
        .name("kvtier-engine")
        .start(
            () -> {
              RankSlot slot;
              try {
                slot =
                    RankSlot.open(model, shard, 0, settings.group(), engineConfig, metrics, hooks);
              } catch (RuntimeException | Error e) {
                engine.failedToOpen(e);
                return;
              }
              engine.serve(slot);
            });
    engine.awaitReady();
    return engine;
  }

  /**
   * Runs this process's rank of a one-rank-per-process group until rank 0 closes the group.
   *
   * @param model the model
   * @param config as for {@link #open}
   * @param settings {@link EngineSettings#rank()} this process's rank, at least 1
   * @param metrics where this rank's backends report transfers
   * @param wrapCollective applied to the collective handle
   * @throws io.kvtier.core.rank.RankGroupFailedException if a rank failed; every rank stops
   * @throws IllegalArgumentException if this process is rank 0 or runs every rank
   */
  public static void follow(
      ServingModel model,
      KvTierConfig config,
      EngineSettings settings,
      BackendMetrics metrics,
      UnaryOperator<Collective> wrapCollective) {
    follow(model, config, settings, metrics, RankSlot.Hooks.NONE.withCollective(wrapCollective));
  }

  /** As above, with test hooks. */
  static void follow(
      ServingModel model,
      KvTierConfig config,
      EngineSettings settings,
      BackendMetrics metrics,
      RankSlot.Hooks hooks) {
    Objects.requireNonNull(settings, "settings");
    if (settings.rank() < 1) {
      throw new IllegalArgumentException(
          "rank="
              + settings.rank()
              + " serves: follow is for ranks 1 and up of a group whose ranks are processes;"
              + " call GenerationEngines.open");
    }
    KvTierConfig shard = shardConfig(model, config);
    runFollower(
        model,
        shard,
        settings.rank(),
        settings,
        settings.engineConfig(shard.ranks()),
        metrics,
        hooks);
  }

  private static void runFollower(
      ServingModel model,
      KvTierConfig shard,
      int rank,
      EngineSettings settings,
      RankEngineConfig engineConfig,
      BackendMetrics metrics,
      RankSlot.Hooks hooks) {
    try (RankSlot slot =
        RankSlot.open(model, shard, rank, settings.group(), engineConfig, metrics, hooks)) {
      RankGroupEngine.follow(slot.engine);
    }
  }

  /**
   * One rank's config: the model's layout checked, then the layout keys set to the rank's
   * ({@link ServingModel#rankLayout}: under tp its shard of the heads, under cp every head of
   * {@code 1/ranks} of the positions), and under cp the L3 model id suffixed {@code -cpN}.
   */
  static KvTierConfig shardConfig(ServingModel model, KvTierConfig config) {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(config, "config");
    int ranks = config.ranks();
    KvLayout rank = model.rankLayout(config.layout(), ranks, config.parallelism());
    if (ranks == 1) {
      return config;
    }
    if (rank.pageSize() != config.layout().pageSize()) {
      throw new IllegalStateException(
          "the model's rank layout "
              + rank
              + " changes the page size of "
              + config.layout()
              + ": every rank's pages are the replicated tree's");
    }
    KvTierConfigBuilder shard =
        KvTierConfig.builder()
            .properties(config.toProperties())
            .set(KvTierKeys.KV_HEADS, Integer.toString(rank.kvHeads()))
            .set(KvTierKeys.HEAD_DIM, Integer.toString(rank.headDim()))
            .set(KvTierKeys.DTYPE_BYTES, Integer.toString(rank.dtypeBytes()));
    if (config.parallelism().cp()) {
      // A cp rank's page of a layout that may be a tp share's too (kv-heads divisible by the
      // ranks) holds other bytes: its L3 keys must not meet a tp group's.
      shard.set(
          KvTierKeys.L3_MODEL_ID,
          config.l3().modelId() + "-cp" + config.parallelism().interleave());
    }
    return shard.build();
  }
}
