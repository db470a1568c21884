package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

/** {@code kvtier simulate}: the summary, the JSON fields, the exit status, usage errors. */
@Timeout(120)
class SimulateCommandTest {
  private static final String SMALL_WORKLOAD =
      "multiturn:conversations=8,turns=3,first=24,answer=4,question=8";

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(Path file) throws IOException {
    return (Map<String, Object>) TestJson.parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object o) {
    return (Map<String, Object>) o;
  }

  @Test
  void aSmallRunPrintsTheTableAndWritesEveryJsonField(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("out/result.json");
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "2",
            "--workload",
            SMALL_WORKLOAD,
            "--page-size",
            "4",
            "--device-pages",
            "48",
            "--host-ratio",
            "3",
            "--write-policy",
            "write_back",
            "--eviction",
            "lfu",
            "--ack-delay",
            "heavy-tail",
            "--seed",
            "3",
            "--ticks",
            "200",
            "--json",
            file.toString());

    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out())
        .contains("kvtier simulate: 2 ranks, ack delay heavy-tail, seed 3")
        .containsPattern("device +\\d+ +\\d+\\.\\d%")
        .containsPattern("host +\\d+ +\\d+\\.\\d%")
        .contains("collectives")
        .contains("digests equal yes")
        .contains("result    PASS");
    Map<String, Object> j = json(file);
    assertThat(j)
        .containsEntry("ranks", 2L)
        .containsEntry("seed", 3L)
        .containsEntry("replicaDigestsEqual", true)
        .containsEntry("desyncs", 0L)
        .containsEntry("leakedPages", 0L)
        .containsEntry("kvMismatches", 0L)
        .containsKeys("requests", "ticks", "promptTokens", "kvVerifiedPages", "wallSeconds");
    assertThat(object(j.get("hitTokens"))).containsKeys("device", "host", "l3");
    assertThat(object(j.get("collectives")))
        .containsKeys("calls", "idleTicks", "skippedTicks", "idleTickCalls")
        .containsEntry("idleTickCalls", 0L);
    assertThat((Long) j.get("requests")).isEqualTo(24L);
    assertThat((Double) j.get("wallSeconds")).isPositive();
    Map<String, Object> ttft = object(j.get("ttftMs"));
    assertThat((Long) ttft.get("requests"))
        .isPositive()
        .isLessThanOrEqualTo((Long) j.get("requests"));
    // the estimate with the cache charges no more per request than the one without
    assertThat((Double) ttft.get("p50WithCache"))
        .isPositive()
        .isLessThanOrEqualTo((Double) ttft.get("p50WithoutCache"));
    assertThat((Double) ttft.get("meanWithCache"))
        .isLessThan((Double) ttft.get("meanWithoutCache"));
    assertThat(ttft).containsKeys("p99WithCache", "p99WithoutCache");
  }

  @Test
  void theAcceptanceRunOfEightSkewedRanksPasses(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("out.json");
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "8",
            "--ack-delay",
            "skewed",
            "--seed",
            "7",
            "--json",
            file.toString());

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    Map<String, Object> j = json(file);
    assertThat(j)
        .containsEntry("replicaDigestsEqual", true)
        .containsEntry("desyncs", 0L)
        .containsEntry("leakedPages", 0L)
        .containsEntry("kvMismatches", 0L);
    assertThat((Long) j.get("kvVerifiedPages")).isPositive();
  }

  /**
   * Issue 31's acceptance: with copies failing and host pages flipping at rest, every flip is
   * caught by its checksum, every request whose load-back failed is recomputed (no aborts, tokens
   * recomputed) and every check passes (no KV mismatch); {@code fail} ends them.
   */
  @Test
  void failedLoadBacksAreRecomputedByDefaultAndEndRequestsUnderFail(@TempDir Path dir)
      throws IOException {
    Map<String, Map<String, Object>> runs = new java.util.LinkedHashMap<>();
    for (String policy : new String[] {"recompute", "fail"}) {
      Path file = dir.resolve(policy + ".json");
      CliRun run =
          run(
              "simulate",
              "--ranks",
              "2",
              "--seed",
              "3",
              "--failure-probability",
              "0.05",
              "--flip-probability",
              "0.2",
              "--on-load-failure",
              policy,
              "--device-pages",
              "96",
              "--page-size",
              "16",
              "--ticks",
              "400",
              "--json",
              file.toString());
      assertThat(run.status()).as(run.out() + run.err()).isZero();
      Map<String, Object> j = json(file);
      assertThat(j)
          .containsEntry("replicaDigestsEqual", true)
          .containsEntry("leakedPages", 0L)
          .containsEntry("kvMismatches", 0L);
      runs.put(policy, j);
      if (policy.equals("recompute")) {
        assertThat(run.out()).contains("failed load-backs sent their requests back to the queue");
      }
    }
    assertThat(runs.get("recompute")).containsEntry("loadFailureAborts", 0L);
    assertThat((Long) runs.get("recompute").get("loadFailureRecomputes")).isPositive();
    assertThat((Long) runs.get("recompute").get("loadFailureLostTokens")).isPositive();
    // Every flipped host page was caught by its checksum: none reached a request's KV.
    assertThat((Long) runs.get("recompute").get("hostChecksumMismatches")).isPositive();
    assertThat((Long) runs.get("fail").get("loadFailureAborts")).isPositive();
    assertThat(runs.get("fail")).containsEntry("loadFailureRecomputes", 0L);
    CliRun bad = run("simulate", "--on-load-failure", "retry");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.firstErrLine())
        .contains("--on-load-failure retry is not a policy kvtier knows: use recompute or fail");
  }

  /**
   * Issue 31 item 2, the L3 half: bits flipped in stored pages of the memory store are each
   * caught by the store's CRC32C and counted, and every check passes; flips without a store are
   * a usage error.
   */
  @Test
  @SuppressWarnings("unchecked")
  void bitsFlippedInStoredL3PagesAreCountedAndCaught(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("flips.json");
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "2",
            "--seed",
            "5",
            "--l3",
            "memory",
            "--l3-prefetch-threshold",
            "8",
            "--l3-flip-probability",
            "0.2",
            "--device-pages",
            "48",
            "--host-ratio",
            "1.5",
            "--page-size",
            "4",
            "--chunk",
            "16",
            "--workload",
            "multiturn:conversations=24,turns=5,first=64,answer=8,question=16",
            "--ticks",
            "400",
            "--json",
            file.toString());
    assertThat(run.status()).as(run.out() + run.err()).isZero();
    Map<String, Object> j = json(file);
    assertThat(j).containsEntry("checksPassed", true).containsEntry("kvMismatches", 0L);
    Map<String, Object> l3 = (Map<String, Object>) j.get("l3");
    assertThat((Long) l3.get("flipsInjected")).isPositive();
    assertThat(l3.get("corruptPages")).isEqualTo(l3.get("flipsInjected"));
    assertThat((Long) l3.get("pagesMissed")).isPositive();
    assertThat(run.out()).contains("stored pages failed their store's checksum");
    CliRun none = run("simulate", "--l3-flip-probability", "0.1");
    assertThat(none.status()).isEqualTo(2);
    assertThat(none.firstErrLine()).contains("--l3-flip-probability").contains("--l3 is none");
  }

  @Test
  void badOptionsAreUsageErrorsNamingTheValue() {
    CliRun delay = run("simulate", "--ack-delay", "slow");
    assertThat(delay.status()).isEqualTo(2);
    assertThat(delay.firstErrLine()).contains("--ack-delay=slow: unknown ack delay 'slow'");
    assertThat(delay.err()).contains("see `kvtier simulate --help`").doesNotContain("Usage:");
    CliRun ranks = run("simulate", "--ranks", "9");
    assertThat(ranks.status()).isEqualTo(2);
    assertThat(ranks.firstErrLine())
        .isEqualTo("kvtier simulate: --ranks=9 is out of range: give 1 to 8 (ranks in the run)");
  }

  /**
   * A per-tick prefill budget below the chunk, on 4 ranks with failing copies and an L3 tier:
   * every check passes, and a budget below 1 is a usage error naming the flag.
   */
  @Test
  void aPrefillBudgetRunPassesEveryCheckAndZeroIsRefused(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("budget.json");
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "4",
            "--seed",
            "7",
            "--chunk",
            "64",
            "--max-prefill-tokens",
            "40",
            "--failure-probability",
            "0.05",
            "--l3",
            "memory",
            "--ticks",
            "400",
            "--json",
            file.toString());
    assertThat(run.status()).as(run.out() + run.err()).isZero();
    Map<String, Object> j = json(file);
    assertThat(j)
        .containsEntry("checksPassed", true)
        .containsEntry("replicaDigestsEqual", true)
        .containsEntry("leakedPages", 0L);
    assertThat((Long) j.get("finished")).isPositive();
    CliRun bad = run("simulate", "--max-prefill-tokens", "0");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.firstErrLine())
        .isEqualTo(
            "kvtier simulate: --max-prefill-tokens=0 is out of range: give 1 or more (prompt"
                + " tokens prefilled per tick)");
  }

  /**
   * The prompt tokens a 2-rank run of shared system prompts computed (32 running, 1,024 device
   * pages), with the default inserts or with {@code --insert-at-finish}; it must pass every check
   * and finish every request.
   */
  private static long computedPromptTokens(
      Path file, boolean atFinish, long requests, String... more) throws IOException {
    List<String> args =
        new ArrayList<>(
            List.of(
                "simulate",
                "--ranks",
                "2",
                "--max-running",
                "32",
                "--device-pages",
                "1024",
                "--json",
                file.toString()));
    args.addAll(List.of(more));
    if (atFinish) {
      args.add("--insert-at-finish");
    }
    CliRun run = run(args.toArray(String[]::new));
    assertThat(run.status()).as(run.out() + run.err()).isZero();
    Map<String, Object> j = json(file);
    assertThat(j).containsEntry("checksPassed", true).containsEntry("finished", requests);
    return (Long) j.get("computedPromptTokens");
  }

  /**
   * Shared system prompts answered at length, arriving while earlier ones decode: by default each
   * prompt's pages join the cache at its one-step prefill, so the later requests match them;
   * {@code --insert-at-finish} inserts them only when a request ends, and more is computed.
   */
  @Test
  void insertingAtFinishComputesSharedPromptsAgain(@TempDir Path dir) throws IOException {
    String[] arriving = {
      "--chunk",
      "512",
      "--ticks",
      "2000",
      "--workload",
      "shared-prefix:groups=4,system=256,question=32,requests=48,output=64,rate=100"
    };
    long now = computedPromptTokens(dir.resolve("now.json"), false, 48, arriving);
    long atFinish = computedPromptTokens(dir.resolve("finish.json"), true, 48, arriving);
    // The floor: each system prompt once, then every question.
    assertThat(now).isEqualTo(4 * 256 + 48 * 32);
    assertThat(atFinish).isGreaterThan(now);
  }

  /**
   * A burst: 32 requests over 4 system prompts arrive in one tick ({@code --arrivals-per-tick}).
   * Those that share a prompt with one already running wait for its prefill step and then match
   * it, so each system prompt is computed once; {@code --insert-at-finish} computes every one.
   */
  @Test
  void aBurstWithSharedSystemPromptsComputesEachOnce(@TempDir Path dir) throws IOException {
    String[] burst = {
      "--chunk",
      "2048",
      "--arrivals-per-tick",
      "32",
      "--workload",
      "shared-prefix:groups=4,system=256,question=32,requests=32,output=16"
    };
    assertThat(computedPromptTokens(dir.resolve("now.json"), false, 32, burst))
        .isEqualTo(4 * 256 + 32 * 32);
    assertThat(computedPromptTokens(dir.resolve("finish.json"), true, 32, burst))
        .isEqualTo(32 * (256 + 32));
    CliRun bad = run("simulate", "--arrivals-per-tick", "0");
    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.firstErrLine()).contains("--arrivals-per-tick=0 is out of range");
  }

  @Test
  void aFullCheckIntervalBelowOneIsAUsageErrorNamingTheFlag() {
    for (String n : new String[] {"0", "-3"}) {
      CliRun bad = run("simulate", "--full-check-interval", n);
      assertThat(bad.status()).isEqualTo(2);
      assertThat(bad.firstErrLine())
          .isEqualTo(
              "kvtier simulate: --full-check-interval="
                  + n
                  + " is out of range: give 1 or more (ticks between full invariant checks)");
    }
  }

  @Test
  void theSummarySaysHowOftenTheInvariantsWereCheckedInFull() {
    String[] small = {
      "simulate",
      "--ranks",
      "1",
      "--workload",
      SMALL_WORKLOAD,
      "--page-size",
      "4",
      "--device-pages",
      "48",
      "--ticks",
      "50"
    };
    CliRun byDefault = run(small);
    CliRun everyTick = run(concat(small, "--full-check-interval", "1"));
    CliRun everySeven = run(concat(small, "--full-check-interval", "7"));

    assertThat(byDefault.status()).as(byDefault.err()).isZero();
    assertThat(byDefault.out())
        .contains(
            "          invariants checked in full every 1000 ticks and after the drain, what"
                + " changed after every tick (--full-check-interval)\n");
    assertThat(everyTick.status()).as(everyTick.err()).isZero();
    assertThat(everyTick.out())
        .contains("          invariants checked in full after every tick and after the drain\n");
    assertThat(everySeven.out()).contains("invariants checked in full every 7 ticks and after");
    // The checks only read the cache: the engine decides alike whatever their cadence.
    assertThat(digestLine(everyTick.out())).isEqualTo(digestLine(byDefault.out()));
    assertThat(digestLine(everySeven.out())).isEqualTo(digestLine(byDefault.out()));
  }

  @Test
  void theSkippedIdleTicksAreReportedAndMadeNoCall(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("r.json");
    // 50 requests per second (one per 50 ticks on average): most ticks have nothing to do.
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "2",
            "--workload",
            SMALL_WORKLOAD + ",rate=50",
            "--page-size",
            "4",
            "--device-pages",
            "48",
            "--abort-probability",
            "0",
            "--json",
            file.toString());

    assertThat(run.status()).as(run.err()).isZero();
    Map<String, Object> j = json(file);
    Map<String, Object> c = object(j.get("collectives"));
    long skipped = (Long) c.get("skippedTicks");
    assertThat(skipped).isPositive().isLessThanOrEqualTo((Long) c.get("idleTicks"));
    // A tick that ran made the recv broadcast (the digest check and the sync reduction come on
    // top); a skipped one made none.
    assertThat((Long) c.get("calls"))
        .isEqualTo(
            (Long) j.get("ticks")
                - skipped
                + (Long) c.get("syncTicks")
                + (Long) c.get("digestChecks"));
    assertThat(run.out())
        .contains("idle ticks " + c.get("idleTicks") + " (" + skipped + " skipped");
  }

  private static String[] concat(String[] first, String... more) {
    String[] all = java.util.Arrays.copyOf(first, first.length + more.length);
    System.arraycopy(more, 0, all, first.length, more.length);
    return all;
  }

  private static String digestLine(String out) {
    return out.lines().filter(l -> l.startsWith("digest ")).findFirst().orElseThrow();
  }

  @Test
  void theBenchmarkReportsEveryRankCount() {
    CliRun run =
        run(
            "simulate",
            "--benchmark",
            "--workload",
            SMALL_WORKLOAD,
            "--ticks",
            "30",
            "--page-size",
            "4",
            "--device-pages",
            "48");

    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out().lines().filter(l -> l.matches(" +[1248] +\\d+ .* pass"))).hasSize(4);
  }

  @Test
  void theJsonCarriesTheFinalDigestThatTheSummaryPrints(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("r.json");
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "2",
            "--workload",
            SMALL_WORKLOAD,
            "--page-size",
            "4",
            "--device-pages",
            "48",
            "--json",
            file.toString());

    assertThat(run.status()).as(run.err()).isZero();
    String digest = (String) json(file).get("replicaDigest");
    assertThat(digest).matches("[0-9a-f]{16}");
    assertThat(run.out()).contains("digest    " + digest);
  }

  @Test
  void aCollectiveThatIsNotOnThePathIsAUsageErrorListingTheOnesFound() {
    CliRun bad = run("simulate", "--collective", "carrier-pigeon", "--rank", "0");

    assertThat(bad.status()).isEqualTo(2);
    assertThat(bad.err())
        .contains("no CollectiveProvider named 'carrier-pigeon' was found")
        .contains("local (")
        .contains("see `kvtier simulate --help`");
  }

  @Test
  void aRankProcessNeedsARankInsideTheGroupAndLocalTakesNone() {
    CliRun missing = run("simulate", "--collective", "hazelcast", "--ranks", "3");
    assertThat(missing.status()).isEqualTo(2);
    assertThat(missing.err())
        .contains(
            "--collective hazelcast runs one rank per process: give"
                + " each process its --rank, 0 to 2");

    CliRun outside = run("simulate", "--collective", "hazelcast", "--ranks", "3", "--rank", "3");
    assertThat(outside.status()).isEqualTo(2);
    assertThat(outside.err()).contains("--rank=3 must be in [0, ranks=3)");

    CliRun local = run("simulate", "--rank", "1");
    assertThat(local.status()).isEqualTo(2);
    assertThat(local.err()).contains("--rank=1 is for one rank per process");
  }

  @Test
  void optionsThatRunInOneProcessAreRefusedForRankProcesses() {
    CliRun benchmark = run("simulate", "--collective", "hazelcast", "--rank", "0", "--benchmark");
    assertThat(benchmark.status()).isEqualTo(2);
    assertThat(benchmark.err()).contains("--benchmark runs every rank count as threads");

    CliRun property =
        run(
            "simulate",
            "--collective",
            "hazelcast",
            "--rank",
            "0",
            "--collective-property",
            "port=5801");
    assertThat(property.status()).isEqualTo(2);
    assertThat(property.err()).contains("collective property 'port' is not NAMESPACE.KEY");

    CliRun watchdog = run("simulate", "--watchdog", "0");
    assertThat(watchdog.status()).isEqualTo(2);
    assertThat(watchdog.err())
        .contains("--watchdog=0 is out of range: give 1 or more (seconds one collective may wait)");
  }

  @Test
  void underMpirunTheRankAndWorldSizeComeFromTheLauncher() {
    Map<String, String> launched = Map.of("OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_RANK", "2");
    assertThat(SimulateCommand.place("mpi", 8, false, null, launched))
        .isEqualTo(new SimulateCommand.Placement(4, 2));
    assertThat(SimulateCommand.place("mpi", 4, true, 2, launched))
        .isEqualTo(new SimulateCommand.Placement(4, 2));
    assertThat(
            SimulateCommand.place(
                "mpi", 4, false, null, Map.of("OMPI_COMM_WORLD_SIZE", "4", "PMIX_RANK", "3")))
        .isEqualTo(new SimulateCommand.Placement(4, 3));
    assertThat(SimulateCommand.place("mpi", 1, false, null, Map.of()))
        .as("a singleton without mpirun")
        .isEqualTo(new SimulateCommand.Placement(1, 0));

    assertThatThrownBy(() -> SimulateCommand.place("mpi", 3, true, null, launched))
        .hasMessageStartingWith("--ranks=3 contradicts mpirun, which started 4 ranks");
    assertThatThrownBy(() -> SimulateCommand.place("mpi", 4, false, 1, launched))
        .hasMessageStartingWith("--rank=1 contradicts mpirun, which made this process rank 2");
    assertThatThrownBy(() -> SimulateCommand.place("mpi", 4, false, null, Map.of()))
        .hasMessageContaining("not started by mpirun")
        .hasMessageContaining("mpirun -np 4");
  }
}
