package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.cli.report.TtftModel;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationCounter;
import io.kvtier.simulator.SimulationFailure;
import io.kvtier.simulator.SimulationResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code kvtier simulate --fail-rank R --fail-tick T [--fail-step STEP] [--fail-kind KIND]}: the
 * run stops with exit 1, failure {@code RANK_FAILED} in the JSON and the summary naming rank R
 * and the step, no line that claims equal digests or counts the abort's pages as leaks, and
 * usage errors (exit 2) that name the option.
 */
@Timeout(120)
class SimulateFailRankTest {
  private static final String SMALL_WORKLOAD =
      "multiturn:conversations=8,turns=3,first=24,answer=4,question=8";

  private static CliRun small(String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "simulate",
                "--workload",
                SMALL_WORKLOAD,
                "--page-size",
                "4",
                "--device-pages",
                "48",
                "--ticks",
                "200"));
    args.addAll(List.of(more));
    return run(args.toArray(String[]::new));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(Path file) throws IOException {
    return (Map<String, Object>) TestJson.parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  @ParameterizedTest(name = "{0} ranks, rank {1} fails in {2} ({3})")
  @CsvSource({
    "4, 2, forward, exception",
    "2, 1, receive, error",
    "4, 0, sync, exception",
    "2, 0, admit, error",
    "4, 3, finish, exception",
    "2, 1, check, error"
  })
  void aFailedRankEndsTheRunWithItsFailure(int ranks, int rank, String step, String kind)
      throws IOException {
    Path file = Files.createTempFile("kvtier-fail-", ".json");
    try {
      long start = System.nanoTime();
      CliRun run =
          small(
              "--ranks",
              Integer.toString(ranks),
              "--fail-rank",
              Integer.toString(rank),
              "--fail-tick",
              "12",
              "--fail-step",
              step,
              "--fail-kind",
              kind,
              "--json",
              file.toString());
      double seconds = (System.nanoTime() - start) / 1e9;

      assertThat(run.status()).as(run.out() + run.err()).isEqualTo(1);
      assertThat(seconds).as("ended by the failure, not the 30 s watchdog").isLessThan(15);
      Map<String, Object> j = json(file);
      assertThat(j)
          .containsEntry("failure", "RANK_FAILED")
          .containsEntry("passed", false)
          .containsEntry("leakedPages", 0L);
      String message = (String) j.get("failureMessage");
      assertThat(message)
          .startsWith("RANK_FAILED: rank " + rank + " failed at tick " + j.get("failureTick"))
          .contains("in step " + step.toUpperCase(java.util.Locale.ROOT))
          .contains(kind.equals("error") ? "InjectedRankError" : "InjectedRankException");
      assertThat((Long) j.get("failureTick")).isGreaterThanOrEqualTo(12L);
      assertThat(run.out())
          .contains("result    FAIL: RANK_FAILED: rank " + rank + " failed at tick")
          .contains("checks    stopped at tick " + j.get("failureTick") + " when a rank failed")
          .doesNotContain("digests equal")
          .doesNotContain("leaked pages");
    } finally {
      Files.deleteIfExists(file);
    }
  }

  @Test
  void theAcceptanceRunFailsRankTwoAtTickFifty(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("out.json");
    long start = System.nanoTime();
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "4",
            "--fail-rank",
            "2",
            "--fail-tick",
            "50",
            "--json",
            file.toString());
    double seconds = (System.nanoTime() - start) / 1e9;

    assertThat(run.status()).as(run.out() + run.err()).isEqualTo(1);
    assertThat(seconds).isLessThan(15);
    Map<String, Object> j = json(file);
    assertThat(j)
        .containsEntry("failure", "RANK_FAILED")
        .containsEntry("failureTick", 50L)
        .containsEntry("leakedPages", 0L);
    assertThat((String) j.get("failureMessage"))
        .startsWith("RANK_FAILED: rank 2 failed at tick 50 in step FORWARD: ");
  }

  @Test
  void theSummaryOfAFailedRunClaimsNoEqualDigestsAndNoLeaks() {
    SimulationConfig config = SimulationConfig.builder().build();
    SimulationResult passed = sample(SimulationFailure.NONE, "", -1, 0);
    SimulationResult failed =
        sample(
            SimulationFailure.RANK_FAILED,
            "RANK_FAILED: rank 2 failed at tick 50 in step FORWARD: boom",
            50,
            0);

    assertThat(SimulationSummary.of(config, passed))
        .contains("checks    digests equal yes, desyncs 0, leaked pages 0")
        .contains("(rank 0's replica at the end)");
    assertThat(SimulationSummary.of(config, failed))
        .contains(
            "checks    stopped at tick 50 when a rank failed: digests not compared at the end,"
                + " leaks not counted; kv verified pages 3, kv mismatches 0")
        .contains("(rank 0's replica where it stopped)")
        .contains("result    FAIL: RANK_FAILED: rank 2 failed at tick 50 in step FORWARD: boom")
        .doesNotContain("digests equal")
        .doesNotContain("leaked pages");
    assertThat(SimulateCommand.rankLine(1, config, failed))
        .isEqualTo(
            "rank 1 of 4 (local): final replica digest 00000000000000ff, equal on every rank:"
                + " not compared (the run stopped); FAIL: RANK_FAILED: rank 2 failed at tick 50"
                + " in step FORWARD: boom");
    assertThat(SimulateCommand.rankLine(1, config, passed))
        .contains("equal on every rank: yes; PASS");
  }

  /** A result with the given failure and otherwise small counters. */
  private static SimulationResult sample(
      SimulationFailure failure, String message, long tick, long leaked) {
    SimulationResult base =
        io.kvtier.simulator.MultiRankSimulator.run(
            SimulationConfig.builder()
                .ranks(1)
                .workload(SMALL_WORKLOAD)
                .pageSize(4)
                .devicePages(48)
                .ticks(20)
                .build());
    return base.toBuilder()
        .ranks(4)
        .replicaDigestsEqual(true)
        .set(SimulationCounter.DESYNCS, 0)
        .set(SimulationCounter.LEAKED_PAGES, leaked)
        .set(SimulationCounter.KV_VERIFIED_PAGES, 3)
        .set(SimulationCounter.KV_MISMATCHES, 0)
        .failure(failure, tick, message)
        .replicaDigest(0xff)
        .build();
  }

  /**
   * A rank process killed under hazelcast leaves the survivors waiting until the watchdog: their
   * run stops with a collective timeout, and the summary must not claim equal digests or count
   * the pages of the requests in flight as leaks.
   */
  @Test
  void aRunStoppedByATimeoutClaimsNoEqualDigestsAndNoLeaks() {
    SimulationConfig config = SimulationConfig.builder().build();
    SimulationResult timedOut =
        sample(
            SimulationFailure.COLLECTIVE_TIMEOUT,
            "COLLECTIVE_TIMEOUT on rank 1: no answer from rank 2 within 30 s",
            120,
            71);

    assertThat(SimulationSummary.of(config, timedOut))
        .contains("checks    stopped at tick 120 by collective timeout: digests not compared")
        .contains("result    FAIL: COLLECTIVE_TIMEOUT on rank 1")
        .doesNotContain("digests equal")
        .doesNotContain("leaked pages");
    assertThat(SimulateCommand.rankLine(1, config, timedOut))
        .contains("equal on every rank: not compared (the run stopped); FAIL: COLLECTIVE_TIMEOUT");
    assertThat(
            SimulationJson.of(
                timedOut, TtftModel.DEFAULT.estimate(timedOut, config.pageSize()), config))
        .contains("\"replicaDigestsEqual\":null")
        .contains("\"finalChecksRan\":false");
  }

  @Test
  void badFailureOptionsAreUsageErrorsNamingTheOption() {
    assertUsageError(
        small("--ranks", "4", "--fail-rank", "7", "--fail-tick", "5"),
        "--fail-rank=7 must be in [0, 4)");
    assertUsageError(
        small("--ranks", "4", "--fail-rank", "-1", "--fail-tick", "5"),
        "--fail-rank=-1 must be in [0, 4)");
    assertUsageError(small("--fail-rank", "1", "--fail-tick", "-3"), "--fail-tick=-3 must be >= 0");
    assertUsageError(
        small("--fail-rank", "1", "--fail-tick", "3", "--fail-step", "decode"),
        "--fail-step=decode is not a step: give one of receive, sync, admit, forward, finish,"
            + " check");
    assertUsageError(
        small("--fail-rank", "1", "--fail-tick", "3", "--fail-kind", "oom"),
        "--fail-kind=oom is not a failure kind: give exception or error");
    assertUsageError(small("--fail-rank", "1"), "--fail-rank=1 needs --fail-tick T");
    assertUsageError(small("--fail-tick", "4"), "--fail-tick=4 needs --fail-rank R");
    assertUsageError(
        small("--fail-step", "sync"), "--fail-step needs --fail-rank R and --fail-tick T");
    assertUsageError(
        small("--fail-kind", "error"), "--fail-kind needs --fail-rank R and --fail-tick T");
    assertUsageError(
        small(
            "--fail-rank",
            "1",
            "--fail-tick",
            "3",
            "--fail-step",
            "check",
            "--digest-interval",
            "0"),
        "--fail-step check fails in the engine's digest check, which --digest-interval 0");
    assertUsageError(
        small("--fail-rank", "1", "--fail-tick", "3", "--fail-step", "sync", "--host-ratio", "0"),
        "--fail-step sync fails in the sync reduction");
    assertUsageError(
        small("--fail-rank", "1", "--fail-tick", "3", "--benchmark"),
        "--fail-rank makes a run fail, and --benchmark measures runs that pass");
  }

  @Test
  void aFailureTickAfterTheRunFailsItSayingSo() {
    CliRun run = small("--ranks", "2", "--fail-rank", "1", "--fail-tick", "1000000");
    assertThat(run.status()).isEqualTo(1);
    assertThat(run.out()).contains("never fired").contains("give an earlier --fail-tick");
  }

  private static void assertUsageError(CliRun run, String message) {
    assertThat(run.status()).as(run.out() + run.err()).isEqualTo(2);
    assertThat(run.firstErrLine()).startsWith("kvtier simulate: ").contains(message);
    assertThat(run.err()).contains("see `kvtier simulate --help`").doesNotContain("Usage:");
  }
}
