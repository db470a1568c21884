package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.L3Stats;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.nio.file.Path;
import java.time.Duration;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The L3 tier in the multi-rank simulator: 4 ranks whose stores run at different speeds (in
 * virtual time), whose shards lose different pages and fail different reads, with prefetches
 * that time out; after every tick the digests and collective schedules must agree, at the end
 * nothing may leak, and every page that came back from L3 (through the host) must hold the KV
 * the model computed for it.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
class L3SimulationTest {

  @BeforeAll
  static void quietLogs() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
    Logger.getLogger("io.kvtier.backend.sim").setLevel(Level.OFF);
  }

  /** Seeds of the runs whose outcome (not only their agreement) the tests assert. */
  private static final long[] HITS_SEEDS = {
    0x6B7674_6965_7201L, 0x6B7674_6965_7202L, 0x6B7674_6965_7203L
  };

  private static final long TIMEOUT_SEED = 0x6B7674_6965_7204L;
  private static final long FAULTS_SEED = 0x6B7674_6965_7205L;

  /** A working set far above the host tier that revisits conversations: L3 must serve them. */
  private static SimulationConfig config(long seed, L3Simulation l3) {
    return SimulationConfig.builder()
        .seed(seed)
        .ranks(4)
        .ackDelay(AckDelay.SKEWED)
        .workload("multiturn:conversations=24,turns=5,first=64,answer=8,question=16")
        .pageSize(4)
        .devicePages(48)
        .hostRatio(1.5)
        .chunkTokens(16)
        .maxRunning(4)
        .ticks(400)
        .abortProbability(0.02)
        .l3(l3)
        .build();
  }

  private static L3Simulation memory() {
    return L3Simulation.NONE
        .withStore("memory")
        .withPrefetch(L3PrefetchPolicy.TIMEOUT, 8)
        .withTiming(400, 0.75, Duration.ofMillis(6), 0);
  }

  private static void assertHealthy(SimulationResult r) {
    assertThat(r.passed()).as("%s", r).isTrue();
    assertThat(r.failure()).isEqualTo(SimulationFailure.NONE);
    assertThat(r.leakedPages()).isZero();
    assertThat(r.kvMismatches()).isZero();
    assertThat(r.kvVerifiedPages()).isPositive();
  }

  private static MultiRankSimulator faultySim(long seed) {
    return new MultiRankSimulator(
        config(seed, memory().withTiming(300, 1.0, Duration.ofMillis(3), 0.02)));
  }

  @Test
  void skewedStoresWithMissingPagesFailedReadsAndTimeoutsStayInAgreement() {
    // Agreement, no leak and correct KV for any seed; that the faults happened and L3 still
    // served hits is a property of the run, asserted on a fixed seed (master seed
    // -5205582594419969655 gave a run with no L3 hit at all).
    SimulationResult any = faultySim(TestSeeds.seedFor("L3SimulationTest.faults")).run();
    assertThat(any.passed()).as("%s", any).isTrue();
    assertThat(any.failure()).isEqualTo(SimulationFailure.NONE);
    assertThat(any.leakedPages()).isZero();
    assertThat(any.kvMismatches()).isZero();
    MultiRankSimulator sim = faultySim(FAULTS_SEED);
    SimulationResult r = sim.run();
    assertHealthy(r);
    assertThat(r.hitTokens().l3()).isPositive();
    L3Stats l3 = sim.l3Stats();
    assertThat(l3.prefetchesTimedOut()).as("%s", l3).isPositive();
    assertThat(l3.pagesMissed()).as("%s", l3).isPositive();
    assertThat(l3.writesFailed()).as("%s", l3).isPositive();
    assertThat(l3.pagesInserted()).as("%s", l3).isPositive();
  }

  @Test
  void l3HitsReplaceComputationAndTheRunIsDeterministic() {
    // Fixed seeds, not ones drawn from the master seed: in a small run the L3 tier can cost more
    // than it saves (master seed 3578717694763151846: 5,156 tokens computed with it, 4,992
    // without; 6921516125611297850: 15,149 against 14,792 over three runs), because a prefetch
    // reserves host slots, evicting host pages that would have hit later, and a prefetch that
    // times out gives nothing back for them. Whether it pays is a property of the run, so the
    // runs are fixed; agreement under random seeds is the faults test's and the property test's.
    long computedWith = 0;
    long computedWithout = 0;
    for (int run = 0; run < 3; run++) {
      long seed = HITS_SEEDS[run];
      SimulationResult without = MultiRankSimulator.run(config(seed, L3Simulation.NONE));
      SimulationResult with = MultiRankSimulator.run(config(seed, memory()));
      assertHealthy(without);
      assertHealthy(with);
      assertThat(without.hitTokens().l3()).isZero();
      assertThat(with.hitTokens().l3()).isPositive();
      computedWith += with.computedTokens();
      computedWithout += without.computedTokens();
      if (run == 0) {
        SimulationResult again = MultiRankSimulator.run(config(seed, memory()));
        assertThat(again.withoutWallTime()).isEqualTo(with.withoutWallTime());
      }
    }
    assertThat(computedWith)
        .as("tokens computed over three runs with L3, against without")
        .isLessThan(computedWithout);
  }

  @Test
  void theTimelineCountsL3HitsPerRequestAndPerSampleAsTheResultDoes() {
    long seed = TestSeeds.seedFor("L3SimulationTest.timeline");
    SimulationResult r = MultiRankSimulator.run(config(seed, memory()));
    assertHealthy(r);
    SimulationTimeline t = r.timeline();
    assertThat(r.hitTokens().l3()).isPositive();
    // The last sample is taken after the drain: its cumulative counters are the result's.
    assertThat(t.samples().getLast().hitTokens()).isEqualTo(r.hitTokens());
    assertThat(t.samples()).extracting(s -> s.hitTokens().l3()).isSorted();
    // Every request is kept (stride 1 for a run this short), so the admissions add up too.
    assertThat(t.requestStride()).isEqualTo(1);
    long device = 0;
    long host = 0;
    long l3 = 0;
    for (SimulationTimeline.Request q : t.requests()) {
      device += q.cachedTokens().device();
      host += q.cachedTokens().host();
      l3 += q.cachedTokens().l3();
    }
    assertThat(new SimulationResult.HitTokens(device, host, l3)).isEqualTo(r.hitTokens());
  }

  @Test
  void aTimeoutShorterThanTheSlowestStoreTakesFewerPagesThanWaitingForAll() {
    // A fixed seed: a run must load pages back for the KV check to verify any (master seed
    // 6921516125611297850 drew a run of the slow store that loaded none).
    long seed = TIMEOUT_SEED;
    L3Simulation slow = memory().withTiming(3000, 1.0, Duration.ofMillis(1), 0);
    MultiRankSimulator timeoutSim = new MultiRankSimulator(config(seed, slow));
    SimulationResult timeout = timeoutSim.run();
    MultiRankSimulator waitingSim =
        new MultiRankSimulator(config(seed, slow.withPrefetch(L3PrefetchPolicy.WAIT_COMPLETE, 8)));
    SimulationResult waiting = waitingSim.run();
    assertHealthy(timeout);
    assertHealthy(waiting);
    assertThat(timeout.hitTokens().l3()).isLessThan(waiting.hitTokens().l3());
    assertThat(timeoutSim.l3Stats().prefetchesTimedOut()).isPositive();
    assertThat(waitingSim.l3Stats().prefetchesTimedOut()).isZero();
  }

  @Test
  void theFileStoreServesTheSameRun(@TempDir Path dir) {
    long seed = TestSeeds.seedFor("L3SimulationTest.file");
    SimulationResult file =
        MultiRankSimulator.run(config(seed, memory().withStore("file").withDirectory(dir)));
    assertHealthy(file);
    assertThat(file.hitTokens().l3()).isPositive();
  }

  /**
   * Issue 31 item 2: bits flipped in stored pages of the memory and the file store are each
   * caught by the store's CRC32C (counted corrupt, a miss): the prefetch ends where the valid
   * pages end, the request computes the rest, and every K/V the model checks is right.
   */
  @Test
  void bitsFlippedInStoredPagesAreEachCaughtAndTheRunStaysCorrect(@TempDir Path dir) {
    long seed = FAULTS_SEED;
    for (L3Simulation l3 :
        new L3Simulation[] {memory(), memory().withStore("file").withDirectory(dir)}) {
      SimulationResult clean = MultiRankSimulator.run(config(seed, l3));
      SimulationResult flipped = MultiRankSimulator.run(config(seed, l3.withFlipProbability(0.2)));
      assertHealthy(flipped);
      assertThat(clean.l3FlipsInjected()).isZero();
      assertThat(clean.l3CorruptPages()).isZero();
      assertThat(flipped.l3FlipsInjected()).as("%s flips", l3.store()).isPositive();
      assertThat(flipped.l3CorruptPages())
          .as("%s: every flipped page found damaged by its store", l3.store())
          .isEqualTo(flipped.l3FlipsInjected());
      assertThat(flipped.l3PagesMissed()).as("%s", l3.store()).isPositive();
      assertThat(flipped.hitTokens().l3())
          .as("%s: damaged pages are not served", l3.store())
          .isLessThan(clean.hitTokens().l3());
    }
  }
}
