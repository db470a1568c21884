package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.rank.ProtocolDefect;
import io.kvtier.core.rank.ReplicaDivergenceException;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Regression proofs: each deliberately broken rule of CACHE.md §14 lets rank-local state
 * decide something replicated, and the simulator must report it as a {@link
 * ReplicaDivergenceException}, a {@link CollectiveDesyncException} or a watchdog {@link
 * CollectiveTimeoutException}, never a hang and never another failure, within the number of
 * seeds each case states. Seeds cycle through 2, 4 and 8 ranks and the copy delay distributions
 * (the defects of copy timing show only when ranks copy at different speeds).
 *
 * <p>The six classes: 1 asymmetric early return around the sync (the seed defect's shape), 2 a
 * rank-local allocation outcome, 3 a collective in a loop with a rank-local trip count, 4 a
 * collective gated on a rank-local map, 5 wall-clock eviction order, and the seed defect
 * itself: the prepared-backup attach predicate reading drain-timed copy completion.
 */
@ExtendWith(SeedExtension.class)
class DefectDetectionTest {
  private static final Set<SimulationFailure> CAUGHT =
      EnumSet.of(
          SimulationFailure.REPLICA_DIVERGENCE,
          SimulationFailure.COLLECTIVE_DESYNC,
          SimulationFailure.COLLECTIVE_TIMEOUT);
  private static final int[] RANKS = {2, 4, 8};
  private static final AckDelay[] DELAYS = {
    AckDelay.SKEWED, AckDelay.STALL, AckDelay.HEAVY_TAIL, AckDelay.UNIFORM
  };

  @BeforeAll
  static void quietLogs() {
    // Every caught defect logs the broken collective group; the assertions say what matters.
    Logger.getLogger("io.kvtier.backend.sim").setLevel(Level.OFF);
  }

  static Stream<Arguments> defects() {
    return Stream.of(
        Arguments.of(
            "seed defect: drain-timed attach",
            ProtocolDefect.NONE,
            CacheDefect.DRAIN_TIMED_ATTACH,
            12),
        Arguments.of(
            "class 1: early return",
            ProtocolDefect.SKIP_SYNC_WHEN_NOTHING_READY_LOCALLY,
            CacheDefect.NONE,
            3),
        Arguments.of(
            "class 2: rank-local allocation",
            ProtocolDefect.NONE,
            CacheDefect.RANK_LOCAL_ALLOCATION_FAILURE,
            3),
        Arguments.of(
            "class 3: loop with a local trip count",
            ProtocolDefect.REDUCE_PER_LOCALLY_READY_ACK,
            CacheDefect.NONE,
            3),
        Arguments.of(
            "class 4: collective gated on a local map",
            ProtocolDefect.REDUCE_FOR_LOCALLY_LOADED_REQUESTS,
            CacheDefect.NONE,
            6),
        Arguments.of(
            "class 5: wall-clock eviction",
            ProtocolDefect.NONE,
            CacheDefect.WALL_CLOCK_EVICTION,
            3));
  }

  private static SimulationConfig base() {
    return SimulationConfig.builder()
        .workload("shared-prefix:groups=6,alpha=1.1,system=24,question=12,output=4,requests=5000")
        .pageSize(4)
        .devicePages(48)
        .chunkTokens(64)
        .maxRunning(4)
        .ticks(400)
        .abortProbability(0.02)
        .watchdog(Duration.ofSeconds(5))
        .build();
  }

  @ParameterizedTest(name = "{0}: caught within {3} seeds")
  @MethodSource("defects")
  @Timeout(300)
  void theSimulatorReportsTheDefect(
      String name, ProtocolDefect protocol, CacheDefect cache, int seeds) {
    long base = TestSeeds.seedFor(getClass().getSimpleName() + name);
    List<String> outcomes = new ArrayList<>();
    int firstCaught = -1;
    for (int i = 0; i < seeds && firstCaught < 0; i++) {
      SimulationConfig config =
          base().toBuilder()
              .seed(base + i)
              .ranks(RANKS[i % RANKS.length])
              .ackDelay(DELAYS[i % DELAYS.length])
              .protocolDefect(protocol)
              .cacheDefect(cache)
              // A prefill inserts its pages at its own step by default, where no streamed copy has
              // completed on any rank in virtual time, so the drain-timed predicate answers alike
              // everywhere; attached at finish, ticks later, it sees each rank's own progress.
              .cacheChunks(cache != CacheDefect.DRAIN_TIMED_ATTACH)
              .build();
      MultiRankSimulator simulator = new MultiRankSimulator(config);
      SimulationResult result = simulator.run();
      outcomes.add(
          config.ranks()
              + " ranks "
              + config.ackDelay()
              + ": "
              + result.failure()
              + " at tick "
              + result.failureTick());
      if (result.failure() == SimulationFailure.NONE) {
        continue;
      }
      assertThat(result.failure())
          .as("run %d of %s: %s", i, name, result.failureMessage())
          .isIn(CAUGHT);
      assertThat(simulator.failureCause())
          .get()
          .isInstanceOfAny(
              ReplicaDivergenceException.class,
              CollectiveDesyncException.class,
              CollectiveTimeoutException.class);
      assertThat(result.passed()).isFalse();
      firstCaught = i;
    }
    assertThat(firstCaught)
        .as("%s was never caught in %d seeds: %s", name, seeds, outcomes)
        .isNotNegative();
  }
}
