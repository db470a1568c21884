package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The collective cost of the rank protocol: an idle tick issues the recv broadcast only, a busy
 * one the recv broadcast plus one fused reduction, and nothing else, on 1 to 8 ranks.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
class CollectiveScheduleTest {

  private static SimulationConfig sparse(int ranks, int digestInterval) {
    // One request every 25 ms (25 ticks) on average: most ticks have nothing outstanding.
    return SimulationConfig.builder()
        .ranks(ranks)
        .digestInterval(digestInterval)
        .seed(TestSeeds.seedFor("CollectiveScheduleTest" + ranks))
        .workload("shared-prefix:groups=2,system=16,question=8,output=2,requests=12,rate=40")
        .pageSize(4)
        .devicePages(32)
        .ticks(2000)
        // Every tick run, so that the counts below are per tick; a skipped tick makes no call
        // at all (IdleTickSkipTest).
        .skipIdleTicks(false)
        .build();
  }

  @Test
  void skippedIdleTicksMakeNoCallAndTheRestKeepTheirSchedule() {
    SimulationConfig config = sparse(4, 0).toBuilder().skipIdleTicks(true).build();
    SimulationResult skipping = MultiRankSimulator.run(config);
    SimulationResult every = MultiRankSimulator.run(sparse(4, 0));
    assertThat(skipping.passed()).as("%s", skipping).isTrue();
    SimulationResult.CollectiveCounts c = skipping.collectives();
    assertThat(skipping.ticks()).isEqualTo(every.ticks());
    assertThat(c.syncTicks()).isEqualTo(every.collectives().syncTicks());
    assertThat(c.idleTickCalls()).isZero();
    assertThat(c.maxCallsPerTick()).isEqualTo(2);
    // One broadcast per tick run plus one reduction per busy tick: fewer ticks run.
    assertThat(c.calls()).isLessThan(every.collectives().calls() / 2);
  }

  @Test
  void idleTicksIssueOnlyTheRecvBroadcastAndBusyTicksOneReductionMore() {
    for (int ranks : new int[] {1, 2, 4, 8}) {
      SimulationResult r = MultiRankSimulator.run(sparse(ranks, 0));
      assertThat(r.passed()).as("%s", r).isTrue();
      SimulationResult.CollectiveCounts c = r.collectives();
      assertThat(c.idleTicks()).as("idle ticks of %s", r).isGreaterThan(r.ticks() / 2);
      assertThat(c.idleTickCalls()).isZero();
      assertThat(c.syncTicks()).isPositive();
      // exactly one broadcast per tick plus one reduction per tick with outstanding operations
      assertThat(c.calls()).isEqualTo(r.ticks() + c.syncTicks());
      assertThat(c.maxCallsPerTick()).isEqualTo(2);
    }
  }

  @Test
  void theDigestCheckAddsOneReductionPerDueTickAndNothingElse() {
    SimulationResult r = MultiRankSimulator.run(sparse(4, 3));
    assertThat(r.passed()).as("%s", r).isTrue();
    SimulationResult.CollectiveCounts c = r.collectives();
    assertThat(c.digestChecks()).isEqualTo(r.ticks() / 3);
    assertThat(c.calls()).isEqualTo(r.ticks() + c.syncTicks() + c.digestChecks());
    assertThat(c.idleTickCalls()).isZero();
    assertThat(c.maxCallsPerTick()).isEqualTo(2);
  }
}
