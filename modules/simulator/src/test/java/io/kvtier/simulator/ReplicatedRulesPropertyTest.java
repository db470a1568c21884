package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The property behind "many ranks that cannot deadlock": with the real rules, no seed makes the
 * ranks diverge, desync, leak, break an invariant or load wrong bytes. 100 random configs (pools,
 * policies, copy delays, failures, aborts, workloads; see {@link SimulationVariants}) of 400
 * ticks each, per rank count, drawn afresh from each run's master seed; {@code
 * -Dkvtier.tests.multiplier=2} runs the 200 a run drew until 2026-12-05 (the default was halved
 * to keep CI short: about 30 s at 2 cores), {@code -Dkvtier.tests.multiplier=100} 100 times as
 * many (add {@code -Djunit.jupiter.execution.timeout.mode=disabled} for such long runs).
 */
@ExtendWith(SeedExtension.class)
class ReplicatedRulesPropertyTest {
  static final int SEEDS = 100;
  static final int TICKS = 400;

  @BeforeAll
  static void quietCopyFailureLog() {
    // Copy failures are part of the property; their warnings would drown the output.
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4, 8})
  @Timeout(900)
  void theRealRulesNeverDivergeDesyncLeakOrLoadWrongBytes(int ranks) {
    long base = TestSeeds.seedFor(ReplicatedRulesPropertyTest.class.getSimpleName() + ranks);
    int runs = TestSeeds.scaled(SEEDS);
    long ticks = 0;
    long verified = 0;
    long hostHits = 0;
    long l3Hits = 0;
    for (int i = 0; i < runs; i++) {
      SimulationConfig config = SimulationVariants.variant(base + i, ranks, TICKS);
      MultiRankSimulator simulator = new MultiRankSimulator(config);
      SimulationResult result = simulator.run();
      assertThat(result.passed())
          .as(
              "run %d of %d failed: %s%nconfig: %s%ncause: %s",
              i,
              runs,
              result,
              config,
              simulator.failureCause().map(Throwable::toString).orElse("-"))
          .isTrue();
      assertThat(
              result.finished() + result.aborted() + result.loadFailureAborts() + result.rejected())
          .as("every request ends exactly once: %s", result)
          .isEqualTo(result.requests());
      assertThat(result.collectives().idleTickCalls()).isZero();
      assertThat(result.collectives().maxCallsPerTick()).isLessThanOrEqualTo(2);
      assertThat(result.ticks()).isGreaterThanOrEqualTo(Math.min(TICKS, 1));
      ticks += result.ticks();
      verified += result.kvVerifiedPages();
      hostHits += result.hitTokens().host();
      l3Hits += result.hitTokens().l3();
    }
    // The runs must exercise what they claim to check: load-backs whose pages were verified.
    assertThat(verified).isPositive();
    assertThat(hostHits).isPositive();
    assertThat(l3Hits).as("a third of the configs with a host tier have an L3 store").isPositive();
    assertThat(ticks).isGreaterThanOrEqualTo((long) runs * TICKS);
  }
}
