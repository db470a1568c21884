package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.rank.ProtocolDefect;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.EnumSet;
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
 * The incremental checks are as strong as the full ones they replace: for every deliberately
 * broken rule of {@link DefectDetectionTest} (the rule variants switched through {@code
 * RuleSwitches} and the protocol defects), the first seed on which the checks of before (the full
 * {@code CacheInvariants.check} after every tick, no tick skipped) catch the defect is run again
 * with the defaults (the incremental check after every tick, the full one every {@link
 * SimulationConfig#DEFAULT_FULL_CHECK_INTERVAL} ticks, the kept digest, idle ticks skipped), which
 * must catch it too, as the same kind of failure, no later than {@code fullCheckInterval} ticks
 * after the tick at which the full checks caught it. The divergences these defects cause are
 * found by the digest comparison, which the kept digest runs after every tick as before, so in
 * practice the tick is the same.
 */
@ExtendWith(SeedExtension.class)
class IncrementalCheckDetectionTest {
  private static final Set<SimulationFailure> CAUGHT =
      EnumSet.of(
          SimulationFailure.REPLICA_DIVERGENCE,
          SimulationFailure.COLLECTIVE_DESYNC,
          SimulationFailure.COLLECTIVE_TIMEOUT,
          SimulationFailure.INVARIANT);
  private static final int[] RANKS = {2, 4, 8};
  private static final AckDelay[] DELAYS = {
    AckDelay.SKEWED, AckDelay.STALL, AckDelay.HEAVY_TAIL, AckDelay.UNIFORM
  };

  @BeforeAll
  static void quietLogs() {
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

  @ParameterizedTest(name = "{0}")
  @MethodSource("defects")
  @Timeout(300)
  void theIncrementalChecksCatchWhatTheFullChecksCatch(
      String name, ProtocolDefect protocol, CacheDefect cache, int seeds) {
    long base = TestSeeds.seedFor(DefectDetectionTest.class.getSimpleName() + name);
    for (int i = 0; i < seeds; i++) {
      SimulationConfig incremental =
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
      SimulationConfig full =
          incremental.toBuilder().fullCheckInterval(1).skipIdleTicks(false).build();
      SimulationResult before = MultiRankSimulator.run(full);
      if (before.failure() == SimulationFailure.NONE) {
        continue;
      }
      assertThat(before.failure()).as(before.failureMessage()).isIn(CAUGHT);
      SimulationResult after = MultiRankSimulator.run(incremental);
      assertThat(after.failure())
          .as(
              "%s, seed %d: the full checks caught %s at tick %d (%s)",
              name, i, before.failure(), before.failureTick(), before.failureMessage())
          .isIn(CAUGHT);
      assertThat(after.failureTick())
          .as(
              "%s: caught at tick %d with the incremental checks, %d with the full ones",
              name, after.failureTick(), before.failureTick())
          .isBetween(0L, before.failureTick() + incremental.fullCheckInterval());
      return;
    }
    throw new AssertionError(name + " was not caught by the full checks in " + seeds + " seeds");
  }
}
