package io.kvtier.examples;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.TimeSource;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;

/**
 * Embedding kvtier in a server of one's own (README, "Embedding"): the server's loop drives one
 * rank's {@link RankEngine} through the six steps of a tick on the {@code sim} device and host
 * pools and the {@code local} collective, with a toy model that writes KV into the pages the
 * cache hands it. Two requests share a 32-token prefix: the second one reuses the first one's
 * cached KV.
 */
public final class EmbeddingExample {
  private EmbeddingExample() {}

  /**
   * What the example produced.
   *
   * @param outputs the tokens generated per request id, in finishing order
   * @param stats the engine's counters after the drain
   * @param ticks the ticks the loop ran
   */
  public record Result(Map<Long, List<Integer>> outputs, RankEngineStats stats, long ticks) {}

  /**
   * Runs the example.
   *
   * @return the outputs and counters
   */
  public static Result run() {
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .set(KvTierKeys.LAYERS, "2")
            .set(KvTierKeys.KV_HEADS, "1")
            .set(KvTierKeys.HEAD_DIM, "4")
            .set(KvTierKeys.PAGE_SIZE, "4")
            .set(KvTierKeys.DEVICE_PAGES, "64")
            .set(KvTierKeys.HOST_PAGES, "128")
            .build();
    int[] shared = IntStream.range(1, 33).toArray();
    List<RankRequest> requests =
        List.of(
            RankRequest.of(
                1, IntStream.concat(IntStream.of(shared), IntStream.of(100, 101)).toArray(), 4),
            RankRequest.of(
                2,
                IntStream.concat(IntStream.of(shared), IntStream.of(200, 201, 202)).toArray(),
                4));
    // [embedding-loop]
    try (KvTierBackends backends = KvTierBackends.open(config)) {
      RankCache cache =
          RankCache.withMemory(
              config.cache(), backends.device(), backends.host(), backends.transfers());
      CollectiveProvider local = backends.providers().collective();
      CollectiveSpec spec = CollectiveSpec.of("my-server", 1, 0, Duration.ofSeconds(30));
      try (Collective group =
          local.join(
              spec,
              backends.providers().context(local, 0, TimeSource.SYSTEM, BackendMetrics.NOOP))) {
        ToyModel model = new ToyModel(backends.device());
        RankEngine engine = new RankEngine(cache, group, model, RankEngineConfig.DEFAULTS);
        long tick = 0;
        while (!engine.isDrained()) {
          // Rank 0 decides what arrives: request 1 first, request 2 once 1 has finished.
          TickCommands commands = TickCommands.NONE;
          if (tick == 0) {
            commands = TickCommands.arrive(List.of(requests.get(0)));
          } else if (model.outputs.containsKey(1L)
              && !model.outputs.containsKey(2L)
              && engine.waitingRequests() + engine.runningRequests() == 0) {
            commands = new TickCommands(List.of(requests.get(1)), new long[0], true);
          }
          engine.receive(commands); // 1: rank 0 broadcasts arrivals and aborts
          engine.sync(); // 2: agree on finished copies (only if any are pending)
          engine.admit(); // 3: match cached prefixes, lock, load back, allocate
          engine.forward(); // 4: the model writes KV layer by layer; backups stream
          engine.finish(); // 5: finished requests enter the cache and are released
          engine.check(); // 6: replica digest check, every digestInterval ticks
          tick++;
        }
        return new Result(model.outputs, engine.stats(), tick);
      }
    }
    // [/embedding-loop]
  }

  /**
   * The cache of one rank with an L3 tier when the config names a store ({@code kvtier.store},
   * README "L3 tier"), without one otherwise; the server's loop is the same either way.
   *
   * @param config the configuration the backends were opened with
   * @param backends the rank's backends, which opened the store
   * @param l3 where the store calls run; the caller closes it before the backends
   * @return the cache
   */
  public static RankCache cacheWithL3(KvTierConfig config, KvTierBackends backends, L3Executor l3) {
    // [embedding-l3]
    // kvtier.store=memory|file|hazelcast: the backends opened this rank's store; the cache
    // writes host-committed pages to it and prefetches them back, agreed at the tick's sync.
    Optional<L3Setup> setup = backends.l3Setup(l3);
    if (setup.isPresent()) {
      return RankCache.withMemory(
          config.cache(), backends.device(), backends.host(), backends.transfers(), setup.get());
    }
    return RankCache.withMemory(
        config.cache(), backends.device(), backends.host(), backends.transfers());
    // [/embedding-l3]
  }

  /**
   * A toy model: the KV of a token is a function of its id and position, written into the
   * request's device pages; the next token is a function of the last one.
   */
  static final class ToyModel implements ModelRunner {
    private final DeviceMemory device;
    private final KvLayout layout;
    private final Map<Long, List<Integer>> generated = new LinkedHashMap<>();
    final Map<Long, List<Integer>> outputs = new LinkedHashMap<>();

    ToyModel(DeviceMemory device) {
      this.device = device;
      this.layout = device.spec().layout();
    }

    @Override
    public int layers() {
      return layout.layers();
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      byte[] vector = new byte[(int) layout.vectorBytes()];
      for (int pos = step.from(); pos < step.to(); pos++) {
        int page = step.pageTable()[pos / layout.pageSize()];
        int inPage = pos % layout.pageSize();
        Arrays.fill(vector, (byte) (step.tokens()[pos] * 7 + pos + layer));
        device.write(page, layer, layout.keyOffset(inPage), MemorySegment.ofArray(vector));
        device.write(page, layer, layout.valueOffset(inPage), MemorySegment.ofArray(vector));
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      int next = (step.tokens()[step.to() - 1] * 31 + 7) % 32000;
      generated.computeIfAbsent(step.requestId(), id -> new ArrayList<>()).add(next);
      return next;
    }

    @Override
    public void released(long requestId) {
      outputs.put(requestId, List.copyOf(generated.getOrDefault(requestId, List.of())));
      generated.remove(requestId);
    }
  }
}
