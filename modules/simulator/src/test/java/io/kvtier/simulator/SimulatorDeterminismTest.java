package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.WritePolicy;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Same seed, same result, bit for bit, whatever the JVM does with the rank threads: copy
 * completion follows each rank's virtual clock and every draw comes from the seed.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
class SimulatorDeterminismTest {

  @BeforeAll
  static void quietLogs() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
    Logger.getLogger("io.kvtier.backend.sim").setLevel(Level.OFF);
  }

  private static SimulationConfig config(long seed, int ranks, AckDelay delay) {
    return SimulationConfig.builder()
        .seed(seed)
        .ranks(ranks)
        .ackDelay(delay)
        .workload("multiturn:conversations=12,turns=4,first=16,answer=4,question=8")
        .pageSize(4)
        .devicePages(40)
        .chunkTokens(8)
        .maxRunning(3)
        .ticks(300)
        .failureProbability(0.02)
        .abortProbability(0.05)
        .build();
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(AckDelay.class)
  void theSameSeedGivesTheSameResult(AckDelay delay) {
    long seed = TestSeeds.seedFor("SimulatorDeterminismTest" + delay);
    for (int ranks : new int[] {1, 3, 8}) {
      SimulationResult first = MultiRankSimulator.run(config(seed, ranks, delay));
      SimulationResult second = MultiRankSimulator.run(config(seed, ranks, delay));
      assertThat(first.passed()).as("%s", first).isTrue();
      assertThat(second.withoutWallTime()).isEqualTo(first.withoutWallTime());
    }
  }

  @Test
  void aDifferentSeedGivesADifferentRun() {
    long seed = TestSeeds.seedFor("SimulatorDeterminismTest.different");
    SimulationResult a = MultiRankSimulator.run(config(seed, 2, AckDelay.UNIFORM));
    SimulationResult b = MultiRankSimulator.run(config(seed + 1, 2, AckDelay.UNIFORM));
    assertThat(b.withoutWallTime()).isNotEqualTo(a.withoutWallTime());
    assertThat(b.workload()).isNotEqualTo(a.workload());
  }

  @Test
  void aCaughtDefectFailsAtTheSameTickEveryTime() {
    long seed = TestSeeds.seedFor("SimulatorDeterminismTest.defect");
    SimulationConfig broken =
        config(seed, 4, AckDelay.SKEWED).toBuilder()
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .cacheDefect(CacheDefect.WALL_CLOCK_EVICTION)
            .watchdog(Duration.ofSeconds(5))
            .build();
    SimulationResult first = MultiRankSimulator.run(broken);
    SimulationResult second = MultiRankSimulator.run(broken);
    assertThat(first.failure()).isEqualTo(SimulationFailure.REPLICA_DIVERGENCE);
    assertThat(second.failure()).isEqualTo(first.failure());
    assertThat(second.failureTick()).isEqualTo(first.failureTick());
  }
}
