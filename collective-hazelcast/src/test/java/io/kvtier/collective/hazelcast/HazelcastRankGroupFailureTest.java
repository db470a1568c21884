package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.backend.sim.SimDeviceMemoryProvider;
import io.kvtier.backend.sim.SimHostMemoryProvider;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankGroupFailedException;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.core.rank.TickStep;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Rank engines over the hazelcast collective: the model throws on rank 1 in FORWARD at tick 0,
 * and every rank raises one {@link RankGroupFailedException} naming rank 1, within seconds,
 * under a watchdog of 90 s.
 */
@Timeout(120)
class HazelcastRankGroupFailureTest {
  private static final Duration WATCHDOG = Duration.ofSeconds(90);
  private static final Duration BOUND = Duration.ofSeconds(15);
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);
  private static HazelcastTestCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = HazelcastTestCluster.start(3, Map.of());
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  /** Decodes token 7; throws in its first layer write on the failing rank. */
  private record Model(boolean failing) implements ModelRunner {
    @Override
    public int layers() {
      return 2;
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      if (failing) {
        throw new IllegalStateException("injected model failure");
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      return 7;
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aModelThatThrowsOnRank1FailsEveryRankAtItsNextCollective(int ranks) throws Exception {
    String group = "engine-failure-" + ranks;
    long start = System.nanoTime();
    long[] elapsed = new long[ranks];
    List<CompletableFuture<Object>> futures = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      int rank = r;
      futures.add(HazelcastTestCluster.inThread(() -> runRank(group, ranks, rank, start, elapsed)));
    }
    for (int r = 0; r < ranks; r++) {
      Object o = futures.get(r).get(100, TimeUnit.SECONDS);
      assertThat(o)
          .as("rank %d", r)
          .isInstanceOfSatisfying(
              RankGroupFailedException.class,
              e -> {
                assertThat(e.failedRank()).isEqualTo(1);
                assertThat(e.tick()).isZero();
                assertThat(e.step()).isEqualTo(TickStep.FORWARD);
                assertThat(e.causeDescription()).contains("injected model failure");
              });
      assertThat(Duration.ofNanos(elapsed[r]))
          .as("rank %d raised it long before the watchdog", r)
          .isLessThan(BOUND);
    }
  }

  private static Object runRank(String group, int ranks, int rank, long start, long[] elapsed) {
    KvLayout layout = new KvLayout(2, 1, 2, 1, CACHE.pageSize());
    BackendContext context =
        new BackendContext(rank, Map.of(), System::nanoTime, BackendMetrics.NOOP);
    try (DeviceMemory device =
            new SimDeviceMemoryProvider()
                .open(
                    new PoolSpec(layout, CACHE.devicePages(), MemoryLayout.LAYER_FIRST), context);
        HostMemory host =
            new SimHostMemoryProvider()
                .open(new PoolSpec(layout, CACHE.hostPages(), MemoryLayout.LAYER_FIRST), context);
        TransferEngine transfers = device.transferEngine(host);
        Collective collective =
            HazelcastCollectives.join(
                cluster.member(rank % 3), CollectiveSpec.of(group, ranks, rank, WATCHDOG))) {
      RankEngine engine =
          new RankEngine(
              RankCache.withMemory(CACHE, device, host, transfers),
              collective,
              new Model(rank == 1),
              RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8));
      try {
        for (int t = 0; t < 20; t++) {
          engine.tick(
              rank != 0
                  ? null
                  : t == 0
                      ? TickCommands.arrive(
                          List.of(RankRequest.of(1, new int[] {1, 2, 3, 4, 5}, 2)))
                      : TickCommands.NONE);
        }
        return "no failure in 20 ticks";
      } catch (RuntimeException e) {
        elapsed[rank] = System.nanoTime() - start;
        return e;
      }
    } catch (Exception e) {
      return e;
    }
  }
}
