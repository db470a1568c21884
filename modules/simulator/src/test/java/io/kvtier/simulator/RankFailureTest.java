package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.rank.RankGroupFailedException;
import io.kvtier.core.rank.TickStep;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A failure injected into one rank's step ({@link RankFailureInjection}) stops the whole group
 * together: every rank ends with {@link SimulationFailure#RANK_FAILED} naming the failed rank, its
 * tick and step, at once and not at the watchdog, for an exception and an {@link Error}, in
 * every step, on 2 and 4 ranks; threads ({@link MultiRankSimulator#run}) and one result per rank
 * ({@link MultiRankSimulator#runRank} on threads over {@code local}).
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
class RankFailureTest {
  /** Far above the time a failure needs to reach every rank, so that a watchdog end shows. */
  private static final Duration WATCHDOG = Duration.ofSeconds(30);

  @BeforeAll
  static void quietLogs() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
    Logger.getLogger("io.kvtier.backend.sim").setLevel(Level.OFF);
  }

  private static SimulationConfig config(int ranks, RankFailureInjection failure) {
    return SimulationConfig.builder()
        .seed(TestSeeds.seedFor("RankFailureTest"))
        .ranks(ranks)
        .workload("multiturn:conversations=12,turns=3,first=16,answer=4,question=8")
        .pageSize(4)
        .devicePages(48)
        .chunkTokens(8)
        .maxRunning(3)
        .ticks(200)
        .abortProbability(0)
        .watchdog(WATCHDOG)
        .rankFailure(failure)
        .build();
  }

  static Stream<Arguments> everyStepAndKind() {
    List<Arguments> cases = new ArrayList<>();
    for (int ranks : new int[] {2, 4}) {
      for (TickStep step : TickStep.values()) {
        for (RankFailureInjection.Kind kind : RankFailureInjection.Kind.values()) {
          cases.add(Arguments.of(ranks, step, kind));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} ranks, {1}, {2}")
  @MethodSource("everyStepAndKind")
  void aFailedStepStopsTheGroupWithItsCause(
      int ranks, TickStep step, RankFailureInjection.Kind kind) {
    int failing = ranks - 1;
    long tick = 20;
    SimulationConfig config = config(ranks, RankFailureInjection.of(failing, tick, step, kind));
    MultiRankSimulator simulator = new MultiRankSimulator(config);

    SimulationResult r = simulator.run();

    assertThat(r.failure()).as("%s", r.failureMessage()).isEqualTo(SimulationFailure.RANK_FAILED);
    assertThat(r.passed()).isFalse();
    assertThat(r.failureTick()).isGreaterThanOrEqualTo(tick).isLessThan(config.ticks());
    assertThat(r.failureMessage())
        .startsWith(
            "RANK_FAILED: rank "
                + failing
                + " failed at tick "
                + r.failureTick()
                + " in step "
                + step
                + ": ")
        .contains(
            kind == RankFailureInjection.Kind.ERROR
                ? RankFailureInjection.InjectedRankError.class.getName()
                : RankFailureInjection.InjectedRankException.class.getName())
        .contains(config.rankFailure().describe());
    assertThat(r.leakedPages()).as("the abort's pages in use are not leaks").isZero();
    assertThat(r.wallSeconds()).as("ended by the failure, not the watchdog").isLessThan(10);
    assertThat(simulator.failureCause())
        .get()
        .isInstanceOfSatisfying(
            RankGroupFailedException.class,
            e -> {
              assertThat(e.failedRank()).isEqualTo(failing);
              assertThat(e.step()).isEqualTo(step);
            });
  }

  @ParameterizedTest(name = "{0} ranks")
  @MethodSource("rankCounts")
  void everyRankReportsTheSameFailure(int ranks) throws Exception {
    SimulationConfig config =
        config(
            ranks,
            RankFailureInjection.of(1, 30, TickStep.FORWARD, RankFailureInjection.Kind.ERROR));
    SimulationResult threaded = MultiRankSimulator.run(config);
    assertThat(threaded.failure()).isEqualTo(SimulationFailure.RANK_FAILED);

    long start = System.nanoTime();
    List<SimulationResult> results = everyRank(config, "rank-failure-" + ranks);
    double seconds = (System.nanoTime() - start) / 1e9;

    for (SimulationResult r : results) {
      assertThat(r.failure()).isEqualTo(SimulationFailure.RANK_FAILED);
      assertThat(r.failureMessage()).isEqualTo(threaded.failureMessage());
      assertThat(r.failureTick()).isEqualTo(threaded.failureTick());
      assertThat(r.leakedPages()).isZero();
    }
    assertThat(seconds).as("every rank ended well before the watchdog").isLessThan(10);
  }

  /**
   * Without the engine's digest checks the simulator's own check after the tick is the call
   * that meets the failed rank's failure barrier on the other ranks; they must still name the
   * failure, not the desync that carried it.
   */
  @ParameterizedTest(name = "{0} ranks, {1}")
  @MethodSource("stepsBeforeTheCheck")
  void theSimulatorsOwnCheckCarriesTheFailureToo(int ranks, TickStep step) throws Exception {
    SimulationConfig config =
        config(ranks, RankFailureInjection.of(0, 25, step, RankFailureInjection.Kind.EXCEPTION))
            .toBuilder()
            .digestInterval(0)
            .build();
    SimulationResult threaded = MultiRankSimulator.run(config);
    assertThat(threaded.failure())
        .as("%s", threaded.failureMessage())
        .isEqualTo(SimulationFailure.RANK_FAILED);
    assertThat(threaded.failureMessage()).startsWith("RANK_FAILED: rank 0 failed at tick ");

    for (SimulationResult r : everyRank(config, "rank-failure-no-digest-" + ranks)) {
      assertThat(r.failure()).as("%s", r.failureMessage()).isEqualTo(SimulationFailure.RANK_FAILED);
      assertThat(r.failureMessage()).isEqualTo(threaded.failureMessage());
    }
  }

  static Stream<Arguments> stepsBeforeTheCheck() {
    return Stream.of(
        Arguments.of(2, TickStep.ADMIT),
        Arguments.of(4, TickStep.FORWARD),
        Arguments.of(2, TickStep.FINISH),
        Arguments.of(4, TickStep.FINISH));
  }

  static Stream<Integer> rankCounts() {
    return Stream.of(2, 4);
  }

  @Test
  void withoutAnInjectedFailureTheSameRunPasses() {
    SimulationResult r = MultiRankSimulator.run(config(4, RankFailureInjection.NONE));
    assertThat(r.passed()).as("%s", r.failureMessage()).isTrue();
    assertThat(r.failure()).isEqualTo(SimulationFailure.NONE);
  }

  @Test
  void aFailureThatNeverComesFailsTheRunSayingWhy() throws Exception {
    SimulationConfig config =
        config(
            2,
            RankFailureInjection.of(
                1, 1_000_000, TickStep.FORWARD, RankFailureInjection.Kind.EXCEPTION));

    SimulationResult r = MultiRankSimulator.run(config);

    assertThat(r.failure()).isEqualTo(SimulationFailure.ERROR);
    assertThat(r.failureMessage())
        .contains("never fired")
        .contains("--fail-rank 1 --fail-tick 1000000 --fail-step forward");
    for (SimulationResult each : everyRank(config, "rank-failure-never")) {
      assertThat(each.failure()).isEqualTo(SimulationFailure.ERROR);
      assertThat(each.failureMessage()).contains("never fired");
    }
  }

  @Test
  void theFailingRankMustBeARankOfTheRun() {
    assertThatThrownBy(
            () ->
                config(
                    4,
                    RankFailureInjection.of(
                        4, 0, TickStep.FORWARD, RankFailureInjection.Kind.EXCEPTION)))
        .hasMessageStartingWith("rankFailure.rank=4 must be in [0, 4)");
    assertThatThrownBy(
            () -> RankFailureInjection.of(-1, 0, TickStep.FORWARD, RankFailureInjection.Kind.ERROR))
        .hasMessage("rank=-1 must be >= 0");
    assertThatThrownBy(
            () -> RankFailureInjection.of(0, -1, TickStep.FORWARD, RankFailureInjection.Kind.ERROR))
        .hasMessage("tick=-1 must be >= 0");
  }

  @Test
  void stepsAndKindsParseFromTheirCommandLineNames() {
    for (TickStep step : TickStep.values()) {
      assertThat(RankFailureInjection.parseStep(RankFailureInjection.stepName(step)))
          .isEqualTo(step);
    }
    assertThat(RankFailureInjection.Kind.parse("Error")).isEqualTo(RankFailureInjection.Kind.ERROR);
    assertThatThrownBy(() -> RankFailureInjection.parseStep("decode"))
        .hasMessage(
            "'decode' is not a step: give one of receive, sync, admit, forward, finish, check");
    assertThatThrownBy(() -> RankFailureInjection.Kind.parse("oom"))
        .hasMessage("'oom' is not a failure kind: give exception or error");
  }

  /** Runs every rank of {@code config} through {@code runRank}, each on its own thread. */
  private static List<SimulationResult> everyRank(SimulationConfig config, String group)
      throws Exception {
    String name = group + "-" + System.nanoTime();
    List<CompletableFuture<SimulationResult>> ranks = new ArrayList<>();
    for (int r = 0; r < config.ranks(); r++) {
      int rank = r;
      CompletableFuture<SimulationResult> f = new CompletableFuture<>();
      Thread.ofPlatform()
          .daemon()
          .name("rank-failure-" + r)
          .start(
              () -> {
                try {
                  f.complete(MultiRankSimulator.runRank(config, rank, name));
                } catch (Throwable t) {
                  f.completeExceptionally(t);
                }
              });
      ranks.add(f);
    }
    List<SimulationResult> results = new ArrayList<>();
    for (CompletableFuture<SimulationResult> f : ranks) {
      results.add(f.get(90, TimeUnit.SECONDS));
    }
    return results;
  }
}
