package io.kvtier.simulator;

import io.kvtier.asserting.FaultPlan;
import io.kvtier.asserting.FaultyKvStore;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.asserting.Providers;
import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.ReplicaDivergenceException;
import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.simulator.workload.Workload;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ReduceOp;
import io.kvtier.spi.TransferEngine;
import java.util.Map;

/**
 * One simulated rank: its virtual clock, its {@code sim} device and host pools and copy engine
 * (opened through the SPI with this rank's {@link BackendContext}), its cache replica, its
 * handle on the config's collective ({@code local} unless the config names another), the
 * pattern model and the {@link RankEngine}; and the loop that runs the ticks and checks after
 * each one.
 *
 * <p>After every tick: {@link CacheInvariants#checkChanged} on this rank (what the tick changed),
 * and {@link CacheInvariants#check} (everything) in the first tick of every {@link
 * SimulationConfig#fullCheckInterval()} ticks; then one uncounted reduction on the raw
 * collective (tag {@code sim-check}) of the engine's replica digest (kept incrementally) and
 * collective schedule, so that every rank compares itself with every other and a rank that
 * issued a different collective sequence meets the others in a mismatched call at once, instead
 * of waiting for the watchdog. After the drain, {@link CacheInvariants#checkIdle}.
 *
 * <p>Ticks that rank 0 skips ({@link TickCommands#skippedTicks()}: nothing outstanding, nothing
 * arriving) run on no rank; each rank learns of the skip from the broadcast, moves its clock to
 * the new tick and applies the stall schedule of the skipped ticks, which only flips stall
 * switches (no copy is outstanding to stall), so later ticks see what they would have.
 *
 * <p>The engine reaches the collective through an {@link EngineCollective} and the model and
 * request listener through a {@link FailureInjector}, which throw the config's injected failure
 * on the rank it names ({@link SimulationConfig#rankFailure()}) and leave every call as it is
 * elsewhere.
 */
final class SimulatedRank implements AutoCloseable {
  /** Tag of the simulator's own per-tick check, outside the engine's counts. */
  static final String CHECK_TAG = "sim-check";

  /** Ticks a run may take to drain after its input ended. */
  static final int DRAIN_TICKS = 20_000;

  static final long TICK_NANOS = AckDelay.TICK_MICROS * 1000;

  private final SimulationConfig config;
  private final int rank;
  private final TickClock clock = new TickClock();
  private final DeviceMemory device;
  private final HostMemory host;
  private final TransferEngine transfers;
  private final FaultyTransferEngine faulty;
  private final Collective collective;
  private final EngineCollective engineCollective;
  private final FailureInjector injector;
  private final RankCache cache;
  private final PatternModel model;

  /** The usable hit tokens with snapshots; null without (usable = matched). */
  private final UsableHits usable;

  private final RankEngine engine;
  private final StallSchedule stalls;
  private final ArrivalFeed feed;

  /** This rank's L3 store and executor, or null without an L3 tier. */
  private KvStore l3Store;

  /** The fault injector around {@link #l3Store}'s store, or null without L3 faults. */
  private FaultyKvStore l3Faults;

  private io.kvtier.core.cache.L3Executor l3Executor;

  /** The file store's directory when this rank created it; deleted at {@link #close()}. */
  private java.nio.file.Path temporaryL3Directory;

  private TimelineRecorder timeline;

  SimulatedRank(SimulationConfig config, int rank, String group, Workload workload) {
    this(config, rank, group, workload, java.util.function.UnaryOperator.identity());
  }

  SimulatedRank(
      SimulationConfig config,
      int rank,
      String group,
      Workload workload,
      java.util.function.UnaryOperator<io.kvtier.core.rank.ModelRunner> modelWrapper) {
    this.config = config;
    this.rank = rank;
    Map<String, String> sim =
        config
            .ackDelay()
            .simProperties(
                config.ranks(),
                config.seed(),
                config.failureProbability(),
                config.flipProbability());
    BackendContext context = new BackendContext(rank, sim, clock, BackendMetrics.NOOP);
    BackendContext poolContext =
        new BackendContext(rank, poolProperties(config.device(), sim), clock, BackendMetrics.NOOP);
    KvLayout layout = layout(config.pageSize());
    int hostPages = config.hostPages();
    DeviceMemory d = null;
    HostMemory h = null;
    TransferEngine t = null;
    try {
      d =
          Providers.named(DeviceMemoryProvider.class, config.device())
              .open(
                  new PoolSpec(layout, config.devicePages(), MemoryLayout.LAYER_FIRST),
                  poolContext);
      CacheConfig cacheConfig =
          CacheConfig.of(config.pageSize(), config.devicePages(), hostPages)
              .withWritePolicy(config.writePolicy())
              .withEvictionPolicy(config.eviction());
      if (config.snapshots()) {
        cacheConfig =
            cacheConfig.withSnapshots(config.snapshotSlots(), config.snapshotIntervalPages());
      }
      if (hostPages > 0) {
        h =
            Providers.named(HostMemoryProvider.class, config.device())
                .open(new PoolSpec(layout, hostPages, MemoryLayout.PAGE_FIRST), poolContext);
        t = d.transferEngine(h);
        faulty =
            config.ackDelay().injectsStalls()
                ? new FaultyTransferEngine(t, FaultPlan.none(), clock)
                : null;
        TransferEngine engine = faulty != null ? faulty : t;
        if (config.l3().enabled()) {
          openL3(config, rank, layout);
          cache =
              RankCache.withMemory(
                  cacheConfig,
                  d,
                  h,
                  engine,
                  new io.kvtier.core.cache.L3Setup(
                      config.l3().engineConfig().withModelId(config.l3ModelId()),
                      l3Store,
                      l3Executor,
                      clock,
                      rank,
                      config.ranks()));
        } else {
          cache = RankCache.withMemory(cacheConfig, d, h, engine);
        }
      } else {
        faulty = null;
        cache = RankCache.withMemory(cacheConfig, d);
      }
      config.cacheDefect().apply(cache, rank, config.seed(), clock, TICK_NANOS);
      collective =
          Providers.named(CollectiveProvider.class, config.collective())
              .join(
                  CollectiveSpec.of(group, config.ranks(), rank, config.watchdog()),
                  collectiveContext(context, config));
    } catch (RuntimeException e) {
      closeQuietly(l3Executor, l3Store, t, h, d);
      deleteTemporaryL3Directory();
      throw e;
    }
    this.device = d;
    this.host = h;
    this.transfers = faulty != null ? faulty : t;
    RankEngineConfig engineConfig =
        RankEngineConfig.DEFAULTS
            .withChunkTokens(config.chunkTokens())
            .withMaxRunning(config.maxRunning())
            .withMaxPrefillTokens(config.maxPrefillTokens())
            .withDigestInterval(config.digestInterval())
            .withGuardCollective(false)
            .withOnLoadFailure(config.onLoadFailure())
            .withCacheChunks(config.cacheChunks())
            .withDefect(config.protocolDefect());
    this.injector = new FailureInjector(config.rankFailure(), rank);
    this.engineCollective = new EngineCollective(collective, injector);
    this.usable = config.snapshots() ? new UsableHits() : null;
    this.model = new PatternModel(d, MultiRankSimulator.VOCAB, config.snapshotSlots());
    this.engine =
        new RankEngine(
            cache, engineCollective, injector.model(modelWrapper.apply(model)), engineConfig);
    injector.attach(engine);
    if (injector.targetsThisRank() || usable != null) {
      engine.setRequestListener(injector.listener(listening(RequestListener.NONE)));
    }
    this.stalls =
        config.ackDelay().injectsStalls()
            ? new StallSchedule(config.seed(), config.ranks(), config.ticks())
            : null;
    this.feed = rank == 0 ? new ArrivalFeed(workload, config) : null;
  }

  /**
   * The collective's context: the rank's own, with the config's collective properties added to
   * the {@code sim.*} keys (the config keeps them out of the {@code sim} namespace). Without
   * properties it is the rank's context itself, as it always was for {@code local}.
   */
  static BackendContext collectiveContext(BackendContext context, SimulationConfig config) {
    if (config.collectiveProperties().isEmpty()) {
      return context;
    }
    Map<String, String> merged = new java.util.LinkedHashMap<>(context.properties());
    merged.putAll(config.collectiveProperties());
    return new BackendContext(context.rank(), merged, context.time(), context.metrics());
  }

  /**
   * Opens this rank's L3 store through {@link java.util.ServiceLoader} by name, wrapped in the
   * fault injector when the run asks for faults, and the executor that makes its progress a
   * function of this rank's virtual clock.
   */
  private void openL3(SimulationConfig config, int rank, KvLayout layout) {
    L3Simulation l3 = config.l3();
    java.util.Map<String, String> properties = new java.util.LinkedHashMap<>();
    if (l3.store().equals("file")) {
      java.nio.file.Path dir =
          l3.directory()
              .orElseGet(
                  () -> {
                    try {
                      temporaryL3Directory =
                          java.nio.file.Files.createTempDirectory("kvtier-sim-l3-");
                      return temporaryL3Directory;
                    } catch (java.io.IOException e) {
                      throw new java.io.UncheckedIOException(
                          "cannot create the file store's directory", e);
                    }
                  });
      properties.put("file.directory", dir.toString());
    }
    KvStore store =
        Providers.named(KvStoreProvider.class, l3.store())
            .open(
                new KvStoreSpec(layout, l3.capacityBytes(), "kvtier-sim-seed-" + config.seed()),
                new BackendContext(rank, properties, clock, BackendMetrics.NOOP));
    l3Faults =
        l3.injectsFaults()
            ? new FaultyKvStore(
                store, config.seed() * 31 + rank, l3.faultProbability(), l3.flipProbability())
            : null;
    l3Store = l3Faults != null ? l3Faults : store;
    l3Executor = new VirtualTimeL3Executor(clock, l3.stepNanos(rank));
  }

  /**
   * The properties of the pool provider: the {@code sim.*} keys for {@code sim}, the same keys
   * under {@code asserting.} for the asserting wrapper (which hands them to {@code sim}), none
   * for any other provider (its defaults).
   */
  static Map<String, String> poolProperties(String device, Map<String, String> sim) {
    return switch (device) {
      case "sim" -> sim;
      case "asserting" -> {
        Map<String, String> wrapped = new java.util.LinkedHashMap<>();
        sim.forEach((k, v) -> wrapped.put("asserting." + k, v));
        yield wrapped;
      }
      default -> Map.of();
    };
  }

  /** The KV layout of the simulated pools: 2 layers of one 4-element head, 2-byte elements. */
  static KvLayout layout(int pageSize) {
    return new KvLayout(2, 1, 4, 2, pageSize);
  }

  RankEngine engine() {
    return engine;
  }

  /** This rank's L3 store's own counters; null without a store. */
  io.kvtier.spi.KvStoreStats l3StoreStats() {
    return l3Store == null ? null : l3Store.stats();
  }

  /** Bits this rank's fault injector flipped in stored L3 pages. */
  long l3FlipsInjected() {
    return l3Faults == null ? 0 : l3Faults.flipsInjected();
  }

  RankCache cache() {
    return cache;
  }

  /** {@code listener}, with the usable-hit counter hearing the admissions first if there is one. */
  private RequestListener listening(RequestListener listener) {
    return usable == null ? listener : usable.listening(listener);
  }

  /**
   * The usable hit tokens of this rank's requests: the matched ones without snapshots.
   *
   * @return per tier
   */
  SimulationResult.HitTokens usableHitTokens() {
    if (usable != null) {
      return usable.tokens();
    }
    io.kvtier.core.rank.RankEngineStats s = engine.stats();
    return new SimulationResult.HitTokens(s.deviceHitTokens(), s.hostHitTokens(), s.l3HitTokens());
  }

  /** This rank's model: its snapshot counters are rank-local, summed over ranks. */
  PatternModel model() {
    return model;
  }

  ArrivalFeed feed() {
    return feed;
  }

  /** Records this rank's requests and ticks into {@code recorder}; call before {@link #run}. */
  void record(TimelineRecorder recorder) {
    this.timeline = recorder;
    engine.setRequestListener(injector.listener(listening(recorder)));
  }

  /** The raw collective, beside the engine's: for the checks outside the engine's counts. */
  Collective collective() {
    return collective;
  }

  /** Runs every tick and the drain; returns normally only if every check passed. */
  void run() {
    long limit = (long) config.ticks() + DRAIN_TICKS;
    long nextFullCheck = 0;
    while (true) {
      long tick = engine.tickNumber();
      if (tick >= limit) {
        throw new NotDrainedException(tick, engine);
      }
      clock.set(tick * TICK_NANOS);
      if (stalls != null && faulty != null) {
        stalls.apply(faulty, rank, tick);
      }
      TickCommands commands = feed != null ? feed.next(tick, engine) : null;
      if (timeline != null && commands != null && commands.skippedTicks() > 0) {
        timeline.skipped(tick, tick + commands.skippedTicks(), engine);
      }
      engine.receive(commands);
      if (engine.tickNumber() != tick) {
        skipped(tick, engine.tickNumber());
        tick = engine.tickNumber();
      }
      engine.sync();
      engine.admit();
      engine.forward();
      engine.finish();
      engine.check();
      if (tick >= nextFullCheck) {
        CacheInvariants.check(cache);
        nextFullCheck = (tick / config.fullCheckInterval() + 1) * config.fullCheckInterval();
      } else {
        CacheInvariants.checkChanged(cache);
      }
      crossCheck(tick);
      if (timeline != null) {
        timeline.afterTick(tick, engine);
      }
      if (engine.isDrained()) {
        return;
      }
    }
  }

  /**
   * After a broadcast that skipped ticks {@code from} to {@code to - 1}: the clock and the stall
   * schedule of the ticks from {@code from + 1} to {@code to}, as the loop would have set them.
   */
  private void skipped(long from, long to) {
    clock.set(to * TICK_NANOS);
    if (stalls != null && faulty != null) {
      for (long t = from + 1; t <= to; t++) {
        stalls.apply(faulty, rank, t);
      }
    }
  }

  private void crossCheck(long tick) {
    long digest = engine.replicaDigest();
    long schedule = engine.collective().scheduleHash();
    long calls = engine.collective().calls();
    long[] r;
    try {
      r =
          collective.allReduce(
              ReduceOp.MIN,
              new long[] {digest, ~digest, schedule, ~schedule, calls, ~calls},
              CHECK_TAG);
    } catch (CollectiveException e) {
      throw engineVerdict(e);
    }
    if (r[2] != ~r[3] || r[4] != ~r[5]) {
      throw new CollectiveDesyncException(
          "ranks issued different collective sequences by the"
              + " end of tick "
              + tick
              + ": calls from "
              + r[4]
              + " to "
              + ~r[5]
              + "; rank "
              + rank
              + " made "
              + calls
              + ", recently "
              + engine.collective().recentCalls());
    }
    if (r[0] != ~r[1]) {
      throw new ReplicaDivergenceException(
          rank, tick, r[0], ~r[1], digest, "found by the simulator's check after the tick");
    }
  }

  /**
   * What the engine makes of a collective failure that the simulator's own check met: the
   * failure of another rank ({@link io.kvtier.core.rank.RankGroupFailedException}) when the
   * desync carries one, else {@code e} itself. The engine is between ticks here, so its next
   * step is the next tick's {@code receive}, whose broadcast throws {@code e} at once ({@link
   * EngineCollective#failNextCall}); the engine is failed after it, as on every other rank.
   */
  private RuntimeException engineVerdict(CollectiveException e) {
    engineCollective.failNextCall(e);
    try {
      engine.receive(rank == 0 ? TickCommands.NONE : null);
    } catch (RuntimeException verdict) {
      return verdict;
    }
    // Not reached: the broadcast threw. Should a later engine swallow it, the check's own
    // exception still stops the run.
    return e;
  }

  /** Device pages still protected after the drain: leaked. */
  long leakedDevicePages() {
    return cache.deviceUsage().protectedPages();
  }

  /** Closes the collective first, so that ranks still waiting in it fail at once. */
  void abandon() {
    collective.close();
  }

  @Override
  public void close() {
    collective.close();
    closeQuietly(l3Executor, l3Store, transfers, host, device);
    deleteTemporaryL3Directory();
  }

  /**
   * Deletes the file store's directory if this rank created it (no {@code --l3-dir}): its pages
   * served this run only, and a directory per rank per run would pile up in the temp folder.
   */
  private void deleteTemporaryL3Directory() {
    java.nio.file.Path dir = temporaryL3Directory;
    temporaryL3Directory = null;
    if (dir == null) {
      return;
    }
    try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.walk(dir)) {
      for (java.nio.file.Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        java.nio.file.Files.deleteIfExists(p);
      }
    } catch (java.io.IOException e) {
      // Left for the temp folder's cleaner; the run's result does not depend on it.
      System.getLogger(SimulatedRank.class.getName())
          .log(System.Logger.Level.WARNING, "could not delete " + dir + ": " + e);
    }
  }

  private static void closeQuietly(AutoCloseable... resources) {
    for (AutoCloseable r : resources) {
      if (r == null) {
        continue;
      }
      try {
        r.close();
      } catch (Exception e) {
        // Closing after a failure must not hide the failure; the pools are off-heap arenas
        // that the JVM reclaims anyway.
      }
    }
  }

  /**
   * Whether this rank was to fail by an injected failure and, the run over, did not: its step's
   * hook never came at or after the tick.
   */
  boolean injectionPending() {
    return injector.pending();
  }

  /** Why the injected failure never fired; for a rank whose {@link #injectionPending} is true. */
  String injectionNotFired() {
    return injector.neverFired(engine.tickNumber());
  }

  /** The ranks did not drain within {@link #DRAIN_TICKS} after the input ended. */
  static final class NotDrainedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotDrainedException(long tick, RankEngine engine) {
      super(
          "not drained after "
              + tick
              + " ticks ("
              + DRAIN_TICKS
              + " after the input ended):"
              + " waiting="
              + engine.waitingRequests()
              + " running="
              + engine.runningRequests()
              + " outstanding="
              + engine.cache().outstandingOperations()
              + "; a request or a copy"
              + " never completes");
    }
  }
}
