package io.kvtier.core.rank;

import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;

/**
 * R ranks of {@link RankEngine} in one JVM for core's tests: each with {@code sim} pools (found
 * through the SPI), its own virtual clock that {@link #tick} sets to {@code tick * 1 ms}, and a
 * handle on one {@code local} group. Copies take 200 us, so an ack submitted in one tick is ready
 * at the next.
 */
final class RankHarness implements AutoCloseable {
  static final long TICK_NANOS = 1_000_000;
  private static final AtomicInteger GROUPS = new AtomicInteger();

  final List<RankEngine> engines = new ArrayList<>();

  /** Each rank's cache as built: bound to its engine, so changed only inside its steps. */
  final List<RankCache> caches = new ArrayList<>();

  final List<AtomicLong> clocks = new ArrayList<>();
  private final List<AutoCloseable> resources = new ArrayList<>();
  private final ExecutorService threads;

  /**
   * Builds the ranks.
   *
   * @param ranks how many
   * @param cacheConfig each rank's cache
   * @param config each rank's engine
   * @param simProperties extra {@code sim.*} properties, for example a slow rank
   * @param wrap wraps rank r's transfer engine (identity for none)
   */
  RankHarness(
      int ranks,
      CacheConfig cacheConfig,
      RankEngineConfig config,
      Map<String, String> simProperties,
      BiFunction<Integer, TransferEngine, TransferEngine> wrap) {
    this(ranks, cacheConfig, config, simProperties, wrap, r -> new CountingModel());
  }

  /**
   * Builds the ranks, each with its own model.
   *
   * @param models rank r's model
   */
  RankHarness(
      int ranks,
      CacheConfig cacheConfig,
      RankEngineConfig config,
      Map<String, String> simProperties,
      BiFunction<Integer, TransferEngine, TransferEngine> wrap,
      java.util.function.IntFunction<ModelRunner> models) {
    this(ranks, cacheConfig, config, simProperties, wrap, models, null);
  }

  /**
   * Builds the ranks, each with its own model and, if {@code l3} is not null, an L3 tier.
   *
   * @param l3 rank r's L3 setup, or null for none
   */
  RankHarness(
      int ranks,
      CacheConfig cacheConfig,
      RankEngineConfig config,
      Map<String, String> simProperties,
      BiFunction<Integer, TransferEngine, TransferEngine> wrap,
      java.util.function.IntFunction<ModelRunner> models,
      java.util.function.IntFunction<io.kvtier.core.cache.L3Setup> l3) {
    this(ranks, cacheConfig, config, simProperties, wrap, models, l3, Duration.ofSeconds(20));
  }

  /**
   * Builds the ranks with another collective watchdog.
   *
   * @param watchdog the {@code local} group's watchdog
   */
  RankHarness(int ranks, CacheConfig cacheConfig, RankEngineConfig config, Duration watchdog) {
    this(
        ranks,
        cacheConfig,
        config,
        Map.of(),
        (r, t) -> t,
        r -> new CountingModel(),
        null,
        watchdog);
  }

  /**
   * Builds the ranks with their own models and another collective watchdog.
   *
   * @param models rank r's model
   * @param watchdog the {@code local} group's watchdog
   */
  RankHarness(
      int ranks,
      CacheConfig cacheConfig,
      RankEngineConfig config,
      java.util.function.IntFunction<ModelRunner> models,
      Duration watchdog) {
    this(ranks, cacheConfig, config, Map.of(), (r, t) -> t, models, null, watchdog);
  }

  private RankHarness(
      int ranks,
      CacheConfig cacheConfig,
      RankEngineConfig config,
      Map<String, String> simProperties,
      BiFunction<Integer, TransferEngine, TransferEngine> wrap,
      java.util.function.IntFunction<ModelRunner> models,
      java.util.function.IntFunction<io.kvtier.core.cache.L3Setup> l3,
      Duration watchdog) {
    String group = "rank-harness-" + GROUPS.incrementAndGet();
    KvLayout layout = new KvLayout(2, 1, 2, 1, cacheConfig.pageSize());
    threads = Executors.newFixedThreadPool(ranks);
    for (int r = 0; r < ranks; r++) {
      AtomicLong clock = new AtomicLong();
      clocks.add(clock);
      Map<String, String> props = new java.util.HashMap<>(simProperties);
      props.putIfAbsent("sim.h2d-latency", "200us");
      props.putIfAbsent("sim.d2h-latency", "200us");
      BackendContext context = new BackendContext(r, props, clock::get, BackendMetrics.NOOP);
      DeviceMemory device =
          provider(DeviceMemoryProvider.class, "sim")
              .open(
                  new PoolSpec(layout, cacheConfig.devicePages(), MemoryLayout.LAYER_FIRST),
                  context);
      HostMemory host =
          provider(HostMemoryProvider.class, "sim")
              .open(
                  new PoolSpec(layout, cacheConfig.hostPages(), MemoryLayout.LAYER_FIRST), context);
      TransferEngine transfers = wrap.apply(r, device.transferEngine(host));
      resources.add(transfers);
      resources.add(host);
      resources.add(device);
      Collective collective =
          provider(CollectiveProvider.class, "local")
              .join(io.kvtier.spi.CollectiveSpec.of(group, ranks, r, watchdog), context);
      resources.add(collective);
      RankCache cache =
          l3 == null
              ? RankCache.withMemory(cacheConfig, device, host, transfers)
              : RankCache.withMemory(cacheConfig, device, host, transfers, l3.apply(r));
      caches.add(cache);
      engines.add(new RankEngine(cache, collective, models.apply(r), config));
    }
  }

  RankHarness(int ranks, CacheConfig cacheConfig, RankEngineConfig config) {
    this(ranks, cacheConfig, config, Map.of(), (r, t) -> t);
  }

  static <P extends KvTierProvider> P provider(Class<P> type, String name) {
    for (P p : ServiceLoader.load(type)) {
      if (p.name().equals(name)) {
        return p;
      }
    }
    throw new AssertionError(
        "no "
            + type.getSimpleName()
            + " named "
            + name
            + ": is kvtier-backend-sim on the test module path?");
  }

  /**
   * Runs {@code body} on every rank's thread at once and returns each rank's result or the
   * exception it threw, in rank order.
   */
  List<Object> onRanks(BiFunction<Integer, RankEngine, Object> body) throws InterruptedException {
    List<Future<Object>> futures = new ArrayList<>();
    for (int r = 0; r < engines.size(); r++) {
      int rank = r;
      futures.add(
          threads.submit(
              () -> {
                try {
                  return body.apply(rank, engines.get(rank));
                } catch (RuntimeException | Error e) {
                  return e;
                }
              }));
    }
    List<Object> out = new ArrayList<>();
    for (Future<Object> f : futures) {
      try {
        out.add(f.get());
      } catch (ExecutionException e) {
        out.add(e.getCause());
      }
    }
    return out;
  }

  /** Runs {@code ticks} whole ticks on every rank; rank 0's commands come from {@code feed}. */
  List<Object> ticks(int ticks, TickFeed feed) throws InterruptedException {
    return onRanks(
        (rank, engine) -> {
          for (int i = 0; i < ticks; i++) {
            long tick = engine.tickNumber();
            clocks.get(rank).set(tick * TICK_NANOS);
            engine.tick(rank == 0 ? feed.commands(tick) : null);
          }
          return engine.stats();
        });
  }

  /**
   * Ticks every rank until it drains (at most {@code maxTicks} ticks), rank 0 fed by {@code
   * feed}, and collects the tokens each rank's listener hears, per request in order; {@code
   * beforeTick} runs on the rank's thread before each of its ticks (rank, tick).
   *
   * @return each rank's tokens by request id, in rank order
   * @throws AssertionError if a rank failed or did not drain in time
   */
  @SuppressWarnings("unchecked")
  List<Map<Long, List<Integer>>> tokensUntilDrained(
      TickFeed feed, int maxTicks, java.util.function.ObjLongConsumer<Integer> beforeTick)
      throws InterruptedException {
    List<Object> out =
        onRanks(
            (rank, e) -> {
              Map<Long, List<Integer>> tokens = new java.util.TreeMap<>();
              e.setRequestListener(
                  new RequestListener() {
                    @Override
                    public void token(long tick, long id, int token) {
                      tokens.computeIfAbsent(id, k -> new ArrayList<>()).add(token);
                    }
                  });
              drain(rank, e, feed, maxTicks, beforeTick);
              return tokens;
            });
    List<Map<Long, List<Integer>>> tokens = new ArrayList<>();
    for (Object o : succeeded(out)) {
      tokens.add((Map<Long, List<Integer>>) o);
    }
    return tokens;
  }

  /**
   * Ticks every rank until it drains (at most {@code maxTicks} ticks), rank 0 fed by {@code
   * feed}, with the listeners the test set on the engines.
   *
   * @return each rank's replica digest, in rank order
   * @throws AssertionError if a rank failed or did not drain in time
   */
  List<Object> digestsUntilDrained(TickFeed feed, int maxTicks) throws InterruptedException {
    return succeeded(
        onRanks(
            (rank, e) -> {
              drain(rank, e, feed, maxTicks, (r, t) -> {});
              return e.replicaDigest();
            }));
  }

  /** One rank's ticks until it drains, its clock at each tick's start. */
  private void drain(
      int rank,
      RankEngine e,
      TickFeed feed,
      int maxTicks,
      java.util.function.ObjLongConsumer<Integer> beforeTick) {
    for (long t = 0; !e.isDrained(); t++) {
      if (t >= maxTicks) {
        throw new AssertionError("rank " + rank + " did not drain in " + maxTicks + " ticks");
      }
      clocks.get(rank).set(t * TICK_NANOS);
      beforeTick.accept(rank, t);
      e.tick(rank == 0 ? feed.commands(t) : null);
    }
  }

  /** The ranks' results, or an AssertionError naming the first rank that failed. */
  private static List<Object> succeeded(List<Object> out) {
    for (int rank = 0; rank < out.size(); rank++) {
      if (out.get(rank) instanceof Throwable failure) {
        throw new AssertionError("rank " + rank + " failed", failure);
      }
    }
    return out;
  }

  /** Rank 0's commands per tick. */
  interface TickFeed {
    TickCommands commands(long tick);
  }

  @Override
  public void close() {
    threads.shutdownNow();
    for (AutoCloseable r : resources) {
      try {
        r.close();
      } catch (Exception e) {
        // the pools are off-heap arenas: a failed close after a failed test is not news
      }
    }
  }

  /** A model that writes nothing and decodes token 7: enough to drive the protocol. */
  static class CountingModel implements ModelRunner {
    long layersWritten;

    @Override
    public int layers() {
      return 2;
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      layersWritten++;
    }

    @Override
    public int nextToken(ModelStep step) {
      return 7;
    }
  }
}
