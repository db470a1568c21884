package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.PoolUsage;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.simulator.SimulationResult.HitTokens;
import io.kvtier.simulator.SimulationTimeline.Request;
import io.kvtier.simulator.SimulationTimeline.Sample;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The timeline of one run: deterministic, consistent with the run's totals at its last sample
 * and request by request, bounded by its strides on a long run, and reported tick by tick to the
 * progress callback.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
class SimulationTimelineTest {

  @BeforeAll
  static void quietLogs() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private static SimulationConfig config(long seed) {
    return SimulationConfig.builder()
        .seed(seed)
        .ranks(2)
        .workload("multiturn:conversations=10,turns=4,first=16,answer=4,question=8")
        .pageSize(4)
        .devicePages(40)
        .hostRatio(3)
        .chunkTokens(8)
        .maxRunning(3)
        .ticks(300)
        .abortProbability(0.03)
        .build();
  }

  @Test
  void theSameConfigGivesAnEqualTimeline() {
    long seed = TestSeeds.seedFor("SimulationTimelineTest.same");
    SimulationResult first = MultiRankSimulator.run(config(seed));
    SimulationResult second = MultiRankSimulator.run(config(seed));
    assertThat(first.passed()).as("%s", first).isTrue();
    assertThat(second.timeline()).isEqualTo(first.timeline());
    assertThat(second.withoutWallTime()).isEqualTo(first.withoutWallTime());
    SimulationResult other = MultiRankSimulator.run(config(seed + 1));
    assertThat(other.timeline()).isNotEqualTo(first.timeline());
  }

  @Test
  void theLastSampleAndTheRequestsAddUpToTheTotals() {
    SimulationConfig config = config(TestSeeds.seedFor("SimulationTimelineTest.totals"));
    List<long[]> progress = new ArrayList<>();
    SimulationResult r =
        new MultiRankSimulator(config).run((done, input) -> progress.add(new long[] {done, input}));
    assertThat(r.passed()).as("%s", r).isTrue();
    SimulationTimeline t = r.timeline();

    assertThat(t.sampleStride()).isEqualTo(1);
    assertThat(t.samples()).hasSize((int) r.ticks());
    Sample last = t.samples().getLast();
    assertThat(last.tick()).isEqualTo(r.ticks() - 1);
    assertThat(last.promptTokens()).isEqualTo(r.promptTokens());
    assertThat(last.hitTokens()).isEqualTo(r.hitTokens());
    assertThat(last.computedTokens()).isEqualTo(r.computedTokens());
    Sample previous = null;
    for (Sample s : t.samples()) {
      assertPool(s.device(), config.devicePages());
      assertPool(s.host(), config.hostPages());
      if (previous != null) {
        assertThat(s.promptTokens()).isGreaterThanOrEqualTo(previous.promptTokens());
        assertThat(s.hitTokens().total()).isGreaterThanOrEqualTo(previous.hitTokens().total());
      }
      previous = s;
    }
    assertThat(t.samples()).anySatisfy(s -> assertThat(s.device().used()).isPositive());

    assertThat(t.requestStride()).isEqualTo(1);
    assertThat(t.requests()).hasSize((int) r.requests());
    assertThat(count(t, RequestOutcome.FINISHED)).isEqualTo(r.finished());
    assertThat(count(t, RequestOutcome.ABORTED)).isEqualTo(r.aborted());
    assertThat(count(t, RequestOutcome.REJECTED)).isEqualTo(r.rejected());
    assertThat(count(t, RequestOutcome.LOAD_FAILED)).isEqualTo(r.loadFailureAborts());
    long device = 0;
    long host = 0;
    long prompt = 0;
    for (Request q : t.requests()) {
      device += q.cachedTokens().device();
      host += q.cachedTokens().host();
      prompt += q.admitTick() >= 0 ? q.promptTokens() : 0;
      if (q.outcome() == RequestOutcome.FINISHED) {
        assertThat(q.hasFirstToken()).as("%s", q).isTrue();
      }
    }
    assertThat(new HitTokens(device, host, 0)).isEqualTo(r.hitTokens());
    assertThat(prompt).isEqualTo(r.promptTokens());
    assertThat(t.requests()).extracting(Request::arrivalTick).isSorted();

    assertThat(progress).hasSize((int) r.ticks());
    for (int i = 0; i < progress.size(); i++) {
      assertThat(progress.get(i)).containsExactly(i + 1, config.ticks());
    }
  }

  @Test
  void aLongRunKeepsAtMostMaxSamplesWithTheDrainLast() {
    // 2 requests per second of virtual time: 16 requests arrive over about 8000 ticks (fewer
    // than 2048 with a chance of about 1e-5)
    SimulationConfig config =
        SimulationConfig.builder()
            .ranks(1)
            .seed(TestSeeds.seedFor("SimulationTimelineTest.long"))
            .workload("multiturn:conversations=8,turns=2,first=16,answer=4,question=8,rate=2")
            .pageSize(4)
            .devicePages(40)
            .ticks(20_000)
            .abortProbability(0)
            .build();
    SimulationResult r = MultiRankSimulator.run(config);
    assertThat(r.passed()).as("%s", r).isTrue();
    SimulationTimeline t = r.timeline();
    assertThat(r.ticks()).isGreaterThan(SimulationTimeline.MAX_SAMPLES);
    assertThat(t.sampleStride()).isGreaterThan(1);
    assertThat(t.samples())
        .hasSizeLessThanOrEqualTo(SimulationTimeline.MAX_SAMPLES)
        .hasSizeGreaterThan(SimulationTimeline.MAX_SAMPLES / 4);
    List<Sample> strided = t.samples().subList(0, t.samples().size() - 1);
    assertThat(strided).allSatisfy(s -> assertThat(s.tick() % t.sampleStride()).isZero());
    assertThat(t.samples().getLast().tick()).isEqualTo(r.ticks() - 1);
    assertThat(t.samples().getLast().promptTokens()).isEqualTo(r.promptTokens());
  }

  @Test
  void manyRequestsKeepOneInEachStrideByArrival() {
    TimelineRecorder recorder = new TimelineRecorder(SimulationProgress.NONE, 1);
    int n = 70_000;
    for (long id = 0; id < n; id++) {
      // each request ends two arrivals later, so some are live when the stride doubles
      recorder.arrived(id, id, 8);
      recorder.admitted(id, id, 4, 0, 0);
      if (id >= 2) {
        recorder.prefilled(id, id - 2);
        recorder.ended(id, id - 2, RequestOutcome.FINISHED);
      }
    }
    recorder.ended(n, n - 2, RequestOutcome.ABORTED);
    recorder.ended(n, n - 1, RequestOutcome.ABORTED);
    SimulationTimeline t = recorder.timeline();
    // 32768 kept at arrival 32768 (stride 2), then again at about 65536 (stride 4)
    assertThat(t.requestStride()).isEqualTo(4);
    assertThat(t.requests())
        .hasSize(n / 4)
        .hasSizeLessThanOrEqualTo(SimulationTimeline.MAX_REQUESTS);
    assertThat(t.requests()).allSatisfy(q -> assertThat(q.id() % 4).isZero());
    assertThat(t.requests()).extracting(Request::id).isSorted();
    Request last = t.requests().getLast();
    assertThat(last.id()).isEqualTo(n - 4);
    assertThat(last.firstTokenTick()).isEqualTo(n - 2);
    assertThat(last.cachedTokens()).isEqualTo(new HitTokens(4, 0, 0));
  }

  @Test
  void recordsRefuseInconsistentValues() {
    HitTokens none = new HitTokens(0, 0, 0);
    assertThatThrownBy(() -> new Request(1, 5, 4, -1, 10, none, RequestOutcome.ABORTED))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("out of order");
    assertThatThrownBy(() -> new Request(1, 5, -1, 7, 10, none, RequestOutcome.FINISHED))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("out of order");
    assertThatThrownBy(
            () -> new Request(1, 5, 5, 6, 10, new HitTokens(8, 4, 0), RequestOutcome.FINISHED))
        .hasMessageContaining("exceed its prompt of 10");
    PoolUsage pool = new PoolUsage(4, 4, 0, 0);
    Sample s = new Sample(3, pool, pool, 0, none, 0);
    assertThatThrownBy(() -> new SimulationTimeline(1, List.of(s, s), 1, List.of()))
        .hasMessageContaining("out of order");
    assertThatThrownBy(() -> new SimulationTimeline(3, List.of(), 1, List.of()))
        .hasMessageContaining("sampleStride=3 must be a power of two");
  }

  private static void assertPool(PoolUsage pool, int capacity) {
    assertThat(pool.capacity()).isEqualTo(capacity);
    assertThat(pool.free() + pool.evictable() + pool.protectedPages()).isEqualTo(capacity);
  }

  private static long count(SimulationTimeline t, RequestOutcome outcome) {
    return t.requests().stream().filter(q -> q.outcome() == outcome).count();
  }
}
