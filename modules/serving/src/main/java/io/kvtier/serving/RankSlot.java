package io.kvtier.serving;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.CacheEventPublisher;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.RankCacheBuilder;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferEngine;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;

/**
 * What one rank of a serving group holds: its backends (pools, transfers, L3 store), its handle on
 * the rank group's collective, the L3 thread, its cache replica, the model's runner on its shard
 * of the KV heads, and the {@link RankEngine} over them. Opened and closed on the rank's
 * own thread; closed in the reverse order (the collective first, so that no other rank waits on
 * this one; the L3 thread before the backends, since it may be in a store call).
 */
final class RankSlot implements AutoCloseable {
  final int rank;
  final KvTierBackends backends;
  final Collective collective;
  final L3Executor executor;
  final RankCache cache;
  final StepCounter runner;
  final RankEngine engine;
  final Optional<KvStore> store;
  final CacheEventPublisher events;

  /** Test hooks: the L3 store and executor, and a wrapper around each rank's model runner. */
  record Hooks(
      UnaryOperator<KvStore> wrapStore,
      IntFunction<L3Executor> l3Executor,
      RunnerWrapper wrapRunner,
      UnaryOperator<Collective> wrapCollective,
      UnaryOperator<TransferEngine> wrapTransfers) {
    /** Background L3 threads, nothing wrapped. */
    static final Hooks NONE =
        new Hooks(
            UnaryOperator.identity(),
            rank -> L3Executor.background("kvtier-l3-rank-" + rank),
            (rank, runner) -> runner,
            UnaryOperator.identity(),
            UnaryOperator.identity());

    Hooks withCollective(UnaryOperator<Collective> wrap) {
      return new Hooks(wrapStore, l3Executor, wrapRunner, wrap, wrapTransfers);
    }

    Hooks withStore(UnaryOperator<KvStore> wrap, IntFunction<L3Executor> executor) {
      return new Hooks(wrap, executor, wrapRunner, wrapCollective, wrapTransfers);
    }

    Hooks withRunner(RunnerWrapper wrap) {
      return new Hooks(wrapStore, l3Executor, wrap, wrapCollective, wrapTransfers);
    }

    Hooks withTransfers(UnaryOperator<TransferEngine> wrap) {
      return new Hooks(wrapStore, l3Executor, wrapRunner, wrapCollective, wrap);
    }
  }

  /** Wraps the model runner of one rank, for tests that inject a failure into a rank. */
  @FunctionalInterface
  interface RunnerWrapper {
    ModelRunner wrap(int rank, ModelRunner runner);
  }

  private RankSlot(
      int rank,
      KvTierBackends backends,
      Collective collective,
      L3Executor executor,
      RankCache cache,
      StepCounter runner,
      RankEngine engine,
      Optional<KvStore> store,
      CacheEventPublisher events) {
    this.rank = rank;
    this.backends = backends;
    this.collective = collective;
    this.executor = executor;
    this.cache = cache;
    this.runner = runner;
    this.engine = engine;
    this.store = store;
    this.events = events;
  }

  /**
   * Opens rank {@code rank} of the group: call it on the thread that will drive the rank.
   *
   * @param model the model
   * @param config this rank's config: the shard's KV layout, {@code kvtier.ranks} the world size
   * @param rank the rank
   * @param group the group's name
   * @param engineConfig the scheduling, equal on every rank
   * @param metrics where this rank's backends report transfers
   * @param hooks the test hooks
   */
  static RankSlot open(
      ServingModel model,
      KvTierConfig config,
      int rank,
      String group,
      RankEngineConfig engineConfig,
      BackendMetrics metrics,
      Hooks hooks) {
    KvTierBackends backends =
        KvTierBackends.open(
            config, ProviderRegistries.discover(), rank, TimeSource.SYSTEM, metrics);
    Collective collective = null;
    L3Executor executor = null;
    CacheEventPublisher events = null;
    try {
      // The kvtier.events.* keys (docs/EVENTS.md): rank 0 publishes, the others get a no-op.
      Map<String, String> properties = config.propertiesFor("kvtier");
      events =
          EventPublishers.open(
              properties, rank, properties.getOrDefault(KvTierKeys.STORE, "none").strip());
      CollectiveProvider provider = backends.providers().collective();
      collective =
          hooks
              .wrapCollective()
              .apply(
                  provider.join(
                      CollectiveSpec.of(group, config.ranks(), rank, config.collectiveTimeout()),
                      backends.providers().context(provider, rank, TimeSource.SYSTEM, metrics)));
      Optional<KvStore> store = backends.store().map(hooks.wrapStore());
      TransferEngine transfers = hooks.wrapTransfers().apply(backends.transfers());
      // The model says how many page slots a recurrent-state snapshot takes (HYBRID.md §5);
      // kvtier.snapshot-slots left at 0 follows it, another value must equal it (the engine
      // refuses a mismatch by name).
      CacheConfig cacheConfig = config.cache();
      int slots = model.snapshotSlots(backends.device().spec().layout(), cacheConfig.devicePages());
      if (cacheConfig.snapshotSlots() == 0 && slots > 0) {
        cacheConfig = cacheConfig.withSnapshots(slots, cacheConfig.snapshotIntervalPages());
      }
      RankCacheBuilder builder =
          RankCache.builder(cacheConfig).device(backends.device()).host(backends.host(), transfers);
      if (store.isPresent()) {
        executor = hooks.l3Executor().apply(rank);
        L3Setup opened = backends.l3Setup(executor).orElseThrow();
        builder.l3(
            new L3Setup(
                opened.config(),
                store.get(),
                executor,
                opened.time(),
                opened.rank(),
                opened.worldSize()));
      }
      RankCache cache = builder.events(events.listener()).build();
      RankShard shard =
          new RankShard(rank, config.ranks(), config.parallelism(), backends.device());
      StepCounter runner = new StepCounter(hooks.wrapRunner().wrap(rank, model.openRunner(shard)));
      RankEngine engine = new RankEngine(cache, collective, runner, engineConfig);
      // The model's partial sums go through the engine's collective: they join its schedule, so
      // a rank that fails in the middle of a forward pass stops the others at that very call.
      shard.join(engine.collective());
      return new RankSlot(
          rank, backends, collective, executor, cache, runner, engine, store, events);
    } catch (RuntimeException | Error e) {
      try {
        if (collective != null) {
          collective.close();
        }
        if (executor != null) {
          executor.close();
        }
        if (events != null) {
          events.close();
        }
      } catch (RuntimeException | Error suppressed) {
        e.addSuppressed(suppressed);
      } finally {
        backends.close();
      }
      throw e;
    }
  }

  @Override
  public void close() {
    try {
      collective.close();
    } finally {
      try {
        if (executor != null) {
          executor.close();
        }
      } finally {
        try {
          events.close();
        } finally {
          backends.close();
        }
      }
    }
  }
}
