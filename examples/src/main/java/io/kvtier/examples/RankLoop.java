package io.kvtier.examples;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.TimeSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

/**
 * The core rank loop by hand, one per rank, as {@link BackendSwapExample} runs it on any backend
 * (a server would rather use the serving engine, see {@link RanksAsThreadsExample}). Several
 * ranks of one group as threads of one JVM, joined by the {@code local} collective:
 * each thread opens its own backends and cache and drives its own {@link RankEngine}; rank 0
 * decides what arrives on which tick and the engine broadcasts it, so every rank runs the same
 * requests and takes the same decisions (the ranks' replica digests are equal at the end).
 *
 */
public final class RankLoop {
  private static final AtomicLong GROUPS = new AtomicLong();

  /** How many requests rank 0 lets arrive, one every other tick. */
  static final int REQUESTS = 6;

  private RankLoop() {}

  /**
   * What one rank did.
   *
   * @param rank the rank
   * @param outputs the tokens generated per request id, in finishing order
   * @param stats the rank's engine counters after the drain
   * @param replicaDigest the hash of the rank's replicated state: equal on every rank
   * @param ticks the ticks the rank ran
   * @param l3 whether the rank's cache had an L3 tier ({@code kvtier.store} named a store)
   */
  public record RankResult(
      int rank,
      Map<Long, List<Integer>> outputs,
      RankEngineStats stats,
      long replicaDigest,
      long ticks,
      boolean l3) {

    /** Validates and copies the fields. */
    public RankResult {
      outputs = Map.copyOf(Objects.requireNonNull(outputs, "outputs"));
      Objects.requireNonNull(stats, "stats");
    }
  }

  /**
   * The examples' configuration: a small model on the {@code sim} pools and the {@code local}
   * collective, with {@code settings} (any kvtier or backend key) on top.
   *
   * @param settings keys and values that override the defaults, for example {@code
   *     kvtier.device=cuda}
   * @return the configuration
   * @throws IllegalArgumentException for an unknown key or a bad value
   */
  static KvTierConfig config(Map<String, String> settings) {
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .set(KvTierKeys.LAYERS, "2")
            .set(KvTierKeys.KV_HEADS, "1")
            .set(KvTierKeys.HEAD_DIM, "4")
            .set(KvTierKeys.PAGE_SIZE, "4")
            .set(KvTierKeys.DEVICE_PAGES, "64")
            .set(KvTierKeys.HOST_PAGES, "128");
    settings.forEach(builder::set);
    return builder.build();
  }

  /**
   * Runs every rank of {@code config} as a thread of this JVM; the collective must be one whose
   * ranks can share a process ({@code local}).
   *
   * @param config the configuration
   * @return each rank's result, in rank order
   * @throws IllegalStateException if a rank failed, with its cause
   */
  static List<RankResult> runAsThreads(KvTierConfig config) {
    String group = "examples-" + GROUPS.incrementAndGet();
    ExecutorService threads = Executors.newFixedThreadPool(config.ranks());
    try {
      List<Future<RankResult>> ranks = new ArrayList<>();
      for (int rank = 0; rank < config.ranks(); rank++) {
        int r = rank;
        ranks.add(threads.submit(() -> runRank(config, r, group)));
      }
      List<RankResult> results = new ArrayList<>();
      for (Future<RankResult> rank : ranks) {
        results.add(rank.get());
      }
      return List.copyOf(results);
    } catch (ExecutionException e) {
      throw new IllegalStateException("a rank failed: " + e.getCause(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the ranks ran", e);
    } finally {
      threads.shutdownNow();
    }
  }

  /**
   * One rank: opens its backends (and the L3 store that {@code kvtier.store} names), joins the
   * group and ticks until every request is served.
   *
   * @param config the configuration, the same on every rank
   * @param rank this rank, {@code 0 <= rank < config.ranks()}
   * @param group the group's name, the same on every rank
   * @return what the rank did
   */
  static RankResult runRank(KvTierConfig config, int rank, String group) {
    List<RankRequest> requests = requests();
    try (KvTierBackends backends =
            KvTierBackends.open(
                config,
                ProviderRegistries.discover(),
                rank,
                TimeSource.SYSTEM,
                BackendMetrics.NOOP);
        L3Executor l3 = L3Executor.inline()) {
      RankCache cache = EmbeddingExample.cacheWithL3(config, backends, l3);
      CollectiveProvider provider = backends.providers().collective();
      CollectiveSpec spec =
          CollectiveSpec.of(group, config.ranks(), rank, config.collectiveTimeout());
      try (Collective collective =
          provider.join(
              spec,
              backends
                  .providers()
                  .context(provider, rank, TimeSource.SYSTEM, BackendMetrics.NOOP))) {
        EmbeddingExample.ToyModel model = new EmbeddingExample.ToyModel(backends.device());
        RankEngine engine = new RankEngine(cache, collective, model, RankEngineConfig.DEFAULTS);
        long tick = 0;
        // isDrained() reads replicated state only (the input has ended, nothing is queued,
        // running or copying), so every rank leaves the loop after the same tick.
        while (!engine.isDrained()) {
          // Only rank 0's commands count: the engine broadcasts them to the others. The last
          // arrival also ends the input.
          TickCommands commands = null;
          if (rank == 0) {
            int next = (int) (tick / 2);
            commands =
                tick % 2 == 0 && next < REQUESTS
                    ? new TickCommands(
                        List.of(requests.get(next)), new long[0], next == REQUESTS - 1)
                    : TickCommands.NONE;
          }
          engine.tick(commands);
          tick++;
        }
        return new RankResult(
            rank, model.outputs, engine.stats(), engine.replicaDigest(), tick, cache.hasL3());
      }
    }
  }

  /** Six requests: three conversations of two turns, each second turn extending the first. */
  static List<RankRequest> requests() {
    List<RankRequest> requests = new ArrayList<>();
    for (int turn = 0; turn < 2; turn++) {
      for (int conversation = 0; conversation < 3; conversation++) {
        int length = 24 + 8 * turn;
        int base = 1000 * (conversation + 1);
        int[] prompt = IntStream.range(base, base + length).toArray();
        requests.add(RankRequest.of(10L * conversation + turn + 1, prompt, 4));
      }
    }
    return List.copyOf(requests);
  }

  /**
   * One line about a rank's run.
   *
   * @param r the rank's result
   * @return the line
   */
  static String describe(RankResult r) {
    return String.format(
        "rank %d: %d ticks, %d finished, prompt tokens %d, device hits %d,"
            + " host hits %d, digest %016x",
        r.rank(),
        r.ticks(),
        r.stats().finished(),
        r.stats().promptTokens(),
        r.stats().deviceHitTokens(),
        r.stats().hostHitTokens(),
        r.replicaDigest());
  }
}
