package io.kvtier.serving;

import io.kvtier.asserting.FaultyKvStore;
import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.L3Stats;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.metrics.MicrometerBackendMetrics;
import io.kvtier.metrics.TimedCollective;
import io.kvtier.model.tiny.TinyModelRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.TinyPrompts.Prompt;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.TimeSource;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs the tiny transformer on R ranks, each a thread with its own {@code sim} pools, cache
 * replica and {@link TinyModelRunner}, joined by a {@code local} collective (timed on the
 * registry) and driven by the reference {@link RankEngine}. Rank 0 feeds the prompts, a few per
 * tick. Cache invariants are checked every few ticks on every rank, and once drained, that
 * nothing leaked. With {@code kvtier.store} set, each rank's cache gets an L3 tier on its own
 * store handle (keys salted by rank), wired as {@link L3Wiring} says.
 */
final class ModelRankGroup {
  private static final AtomicLong GROUPS = new AtomicLong();

  private ModelRankGroup() {}

  /** What one rank saw. */
  record RankOutcome(Map<Long, int[]> outputs, RankEngineStats stats, L3Stats l3) {}

  /**
   * How each rank runs the L3 store that {@code kvtier.store} names.
   *
   * @param inline store calls on the rank's thread ({@link L3Executor#inline}) rather than a
   *     background thread per rank
   * @param faults the chance that the store loses a page, fails a read or throws (a {@link
   *     FaultyKvStore} per rank, seeded by {@code seed} and the rank); 0 for none
   * @param seed the fault seed
   */
  record L3Wiring(boolean inline, double faults, long seed) {
    /** Background threads, no faults. */
    static final L3Wiring DEFAULT = new L3Wiring(false, 0, 0);
  }

  /**
   * Runs the prompts to the end on every rank.
   *
   * @param model the model
   * @param config the pools and policies, {@code kvtier.ranks} ranks, the {@code local}
   *     collective with its watchdog
   * @param engineConfig the scheduling, equal on every rank
   * @param prompts the requests; request {@code i} has id {@code i}
   * @param arrivalsPerTick prompts rank 0 feeds per arrival tick
   * @param ticksBetweenArrivals 1 to feed every tick, more to leave ticks without arrivals
   * @param maxStalledTicks a count of ticks in a row without progress (no arrival, admission,
   *     finish, abort, computed or generated token, and no change in the outstanding copies) at
   *     which the run fails as stuck; replicated, so every rank stops at the same tick. A bound
   *     on ticks in all would not do: while requests wait on copies, which finish by the wall
   *     clock, the number of ticks grows with the machine's speed
   * @param registry where transfer and collective meters go
   * @return each rank's outcome, by rank
   * @throws Exception the first rank's failure
   */
  static List<RankOutcome> run(
      TinyTransformer model,
      KvTierConfig config,
      RankEngineConfig engineConfig,
      List<Prompt> prompts,
      int arrivalsPerTick,
      int ticksBetweenArrivals,
      long maxStalledTicks,
      MeterRegistry registry)
      throws Exception {
    return run(
        model,
        config,
        engineConfig,
        prompts,
        arrivalsPerTick,
        ticksBetweenArrivals,
        maxStalledTicks,
        registry,
        L3Wiring.DEFAULT);
  }

  /**
   * As above, with the wiring of the L3 store if the config names one.
   *
   * @param l3 how each rank runs its store
   */
  static List<RankOutcome> run(
      TinyTransformer model,
      KvTierConfig config,
      RankEngineConfig engineConfig,
      List<Prompt> prompts,
      int arrivalsPerTick,
      int ticksBetweenArrivals,
      long maxStalledTicks,
      MeterRegistry registry,
      L3Wiring l3)
      throws Exception {
    String group = "model-rank-group-" + GROUPS.incrementAndGet();
    int ranks = config.ranks();
    ExecutorService threads = Executors.newFixedThreadPool(ranks);
    try {
      List<Future<RankOutcome>> futures = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        int rank = r;
        futures.add(
            threads.submit(
                () ->
                    runRank(
                        model,
                        config,
                        engineConfig,
                        prompts,
                        arrivalsPerTick,
                        ticksBetweenArrivals,
                        maxStalledTicks,
                        registry,
                        group,
                        rank,
                        l3)));
      }
      List<RankOutcome> outcomes = new ArrayList<>();
      Exception failure = null;
      for (Future<RankOutcome> f : futures) {
        try {
          outcomes.add(f.get());
        } catch (ExecutionException e) {
          // Rank 0's failure first: the others usually fail only because rank 0 left.
          if (failure == null && e.getCause() instanceof Exception cause) {
            failure = cause;
          } else if (failure == null) {
            throw e;
          }
        }
      }
      if (failure != null) {
        throw failure;
      }
      return outcomes;
    } finally {
      threads.shutdownNow();
    }
  }

  private static RankOutcome runRank(
      TinyTransformer model,
      KvTierConfig config,
      RankEngineConfig engineConfig,
      List<Prompt> prompts,
      int arrivalsPerTick,
      int ticksBetweenArrivals,
      long maxStalledTicks,
      MeterRegistry registry,
      String group,
      int rank,
      L3Wiring l3)
      throws InterruptedException {
    try (KvTierBackends backends =
        KvTierBackends.open(
            config,
            ProviderRegistries.discover(),
            rank,
            TimeSource.SYSTEM,
            new MicrometerBackendMetrics(registry))) {
      CollectiveProvider provider = backends.providers().collective();
      try (Collective collective =
          new TimedCollective(
              provider.join(
                  CollectiveSpec.of(group, config.ranks(), rank, config.collectiveTimeout()),
                  backends
                      .providers()
                      .context(
                          provider, rank, TimeSource.SYSTEM, io.kvtier.spi.BackendMetrics.NOOP)),
              registry)) {
        // Closed before the backends close the store it calls.
        L3Executor executor =
            backends.store().isEmpty()
                ? null
                : l3.inline() ? L3Executor.inline() : L3Executor.background("l3-rank-" + rank);
        try {
          return runEngine(
              model,
              backends,
              collective,
              executor,
              l3,
              engineConfig,
              prompts,
              arrivalsPerTick,
              ticksBetweenArrivals,
              maxStalledTicks,
              rank);
        } finally {
          if (executor != null) {
            executor.close();
          }
        }
      }
    }
  }

  private static RankOutcome runEngine(
      TinyTransformer model,
      KvTierBackends backends,
      Collective collective,
      L3Executor executor,
      L3Wiring l3,
      RankEngineConfig engineConfig,
      List<Prompt> prompts,
      int arrivalsPerTick,
      int ticksBetweenArrivals,
      long maxStalledTicks,
      int rank)
      throws InterruptedException {
    KvTierConfig config = backends.config();
    RankCache cache;
    if (executor == null) {
      cache =
          RankCache.withMemory(
              config.cache(), backends.device(), backends.host(), backends.transfers());
    } else {
      L3Setup opened = backends.l3Setup(executor).orElseThrow();
      KvStore store =
          l3.faults() > 0
              ? new FaultyKvStore(opened.store(), l3.seed() * 31 + rank, l3.faults())
              : opened.store();
      cache =
          RankCache.withMemory(
              config.cache(),
              backends.device(),
              backends.host(),
              backends.transfers(),
              new L3Setup(opened.config(), store, executor, opened.time(), rank, config.ranks()));
    }
    Map<Long, List<Integer>> tokens = new HashMap<>();
    TinyModelRunner runner = new TinyModelRunner(model, backends.device());
    RankEngine engine = new RankEngine(cache, collective, runner, engineConfig);
    engine.setRequestListener(
        new RequestListener() {
          @Override
          public void token(long tick, long id, int token) {
            tokens.computeIfAbsent(id, k -> new ArrayList<>()).add(token);
          }
        });
    int fed = 0;
    Progress progress = new Progress(engine, cache);
    long stalledSince = engine.tickNumber();
    while (!engine.isDrained()) {
      Progress now = new Progress(engine, cache);
      if (!now.equals(progress)) {
        progress = now;
        stalledSince = engine.tickNumber();
      } else if (engine.tickNumber() - stalledSince >= maxStalledTicks) {
        StringBuilder live = new StringBuilder();
        for (long id : engine.liveRequestIds()) {
          Prompt p = prompts.get((int) id);
          live.append(" id=")
              .append(id)
              .append(" (prompt ")
              .append(p.tokens().length)
              .append(" tokens, max_tokens ")
              .append(p.maxTokens())
              .append(", generated ")
              .append(tokens.getOrDefault(id, List.of()).size())
              .append(')');
        }
        throw new IllegalStateException(
            "rank "
                + rank
                + " made no progress from tick "
                + stalledSince
                + " to tick "
                + engine.tickNumber()
                + ": "
                + engine
                + ", "
                + cache.outstandingOperations()
                + " copies outstanding, "
                + progress
                + "; live requests:"
                + live);
      }
      TickCommands commands = null;
      if (rank == 0) {
        List<RankRequest> arrivals = new ArrayList<>();
        int batch = engine.tickNumber() % ticksBetweenArrivals == 0 ? arrivalsPerTick : 0;
        for (int i = 0; i < batch && fed < prompts.size(); i++, fed++) {
          Prompt p = prompts.get(fed);
          arrivals.add(RankRequest.of(fed, p.tokens(), p.maxTokens()));
        }
        commands = new TickCommands(arrivals, new long[0], fed == prompts.size());
      }
      engine.tick(commands);
      if (engine.liveRequestIds().length == 0) {
        // Only copies are outstanding, and they complete by the wall clock: without a pause
        // an idle tick takes microseconds and the tick bound would run out before a slow
        // rank's copies on a loaded machine. Rank-local, so no decision depends on it.
        Thread.sleep(0, 200_000);
      }
      if (engine.tickNumber() % 16 == 0) {
        CacheInvariants.check(cache);
      }
    }
    CacheInvariants.checkIdle(cache);
    Map<Long, int[]> outputs = new HashMap<>();
    tokens.forEach(
        (id, list) -> outputs.put(id, list.stream().mapToInt(Integer::intValue).toArray()));
    return new RankOutcome(outputs, engine.stats(), cache.l3Stats());
  }

  /** What a tick that makes progress changes; all of it replicated. */
  private record Progress(
      long arrived,
      long admitted,
      long finished,
      long aborted,
      long computedTokens,
      long generatedTokens,
      int outstandingCopies) {

    Progress(RankEngine engine, RankCache cache) {
      this(engine.stats(), cache.outstandingOperations());
    }

    private Progress(RankEngineStats s, int outstandingCopies) {
      this(
          s.arrived(),
          s.admitted(),
          s.finished(),
          s.aborted(),
          s.computedTokens(),
          s.generatedTokens(),
          outstandingCopies);
    }
  }
}
