package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.Availability;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.testkit.TestSeeds;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier simulate} with one rank per process: under {@code mpirun -np 4} over the {@code
 * mpi} collective, and as 3 processes over the {@code hazelcast} collective (an embedded member
 * each, on loopback). Every rank must report the final digest of the {@code local} run of the
 * same options, and rank 0's JSON must equal the local run's in every field but the wall time.
 * With {@code --fail-rank}, every rank process must stop with the same {@code RANK_FAILED}.
 *
 * <p>The rank processes run {@link KvTierCli} on the class path of this test JVM (everything the
 * CLI needs at run time is on it, and providers are found through their {@code META-INF/services}
 * files there), since the cli jar is packaged only after the tests.
 */
@Timeout(240)
class SimulateRankProcessesTest {
  private static final String WORKLOAD =
      "multiturn:conversations=8,turns=3,first=24,answer=4,question=8";

  /** Bound on a whole job: a rank still alive then hangs (the watchdog ends healthy ones). */
  private static final long HANG_GUARD_SECONDS = 180;

  @TempDir Path dir;

  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void killLeftovers() {
    for (Process p : processes) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
  }

  /** The options of both runs: small, with stalls, copy failures and aborts to replay. */
  private static List<String> options(int ranks, long seed) {
    return List.of(
        "simulate",
        "--ranks",
        Integer.toString(ranks),
        "--workload",
        WORKLOAD,
        "--page-size",
        "4",
        "--device-pages",
        "48",
        "--ack-delay",
        "heavy-tail",
        "--failure-probability",
        "0.02",
        "--abort-probability",
        "0.05",
        "--seed",
        Long.toString(seed));
  }

  @Test
  void mpirunWithFourRankProcessesGivesTheLocalResult() throws Exception {
    Path mpirun = onPath("mpirun").orElse(null);
    skipUnless(
        mpirun != null,
        "mpirun is not on the PATH; install it with"
            + " `apt-get install openmpi-bin libopenmpi-dev`");
    Availability mpi = Providers.named(CollectiveProvider.class, "mpi").availability();
    skipUnless(mpi.available(), "the mpi collective is unavailable here: " + mpi.reason());
    long seed = TestSeeds.seedFor("SimulateRankProcessesTest.mpi");
    Map<String, Object> local = localRun(options(4, seed));

    List<String> command =
        new ArrayList<>(
            List.of(
                mpirun.toString(),
                "--oversubscribe",
                "--bind-to",
                "none",
                "--mca",
                "btl",
                "self,vader",
                "-np",
                "4"));
    command.addAll(java());
    command.addAll(options(4, seed));
    command.addAll(List.of("--collective", "mpi", "--json", dir.resolve("mpi.json").toString()));
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("mpi.log").toFile());
    // Open MPI refuses to run as root (as CI does) without both variables.
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT", "1");
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    int status = await(builder.start(), dir.resolve("mpi.log"));
    String output = Files.readString(dir.resolve("mpi.log"), StandardCharsets.UTF_8);

    assertThat(status).as("mpirun's exit status; %s", reproduce(output)).isZero();
    assertSameResult(local, dir.resolve("mpi.json"), output, 4, "mpi");
  }

  @Test
  void threeHazelcastRankProcessesGiveTheLocalResult() throws Exception {
    long seed = TestSeeds.seedFor("SimulateRankProcessesTest.hazelcast");
    Map<String, Object> local = localRun(options(3, seed));
    StringBuilder output = new StringBuilder();
    List<Integer> statuses = hazelcastRanks(options(3, seed), List.of(), output);

    assertThat(statuses)
        .as("the ranks' exit statuses; %s", reproduce(output.toString()))
        .containsOnly(0);
    assertSameResult(local, dir.resolve("hazelcast.json"), output.toString(), 3, "hazelcast");
  }

  @Test
  void overHazelcastAFailedRankStopsEveryRankProcessWithItsFailure() throws Exception {
    long seed = TestSeeds.seedFor("SimulateRankProcessesTest.hazelcast-fail");
    StringBuilder output = new StringBuilder();
    List<Integer> statuses =
        hazelcastRanks(
            options(3, seed),
            List.of("--fail-rank", "1", "--fail-tick", "20", "--fail-step", "receive"),
            output);

    assertThat(statuses)
        .as("the ranks' exit statuses; %s", reproduce(output.toString()))
        .containsOnly(1);
    assertFailedTogether(dir.resolve("hazelcast.json"), output.toString(), 3, "hazelcast", 1);
  }

  /**
   * Runs 3 rank processes over hazelcast on loopback with {@code options} and {@code more},
   * rank 0 writing {@code hazelcast.json}; appends what they printed to {@code output}.
   *
   * @return the ranks' exit statuses
   */
  private List<Integer> hazelcastRanks(
      List<String> options, List<String> more, StringBuilder output) throws Exception {
    // A cluster of its own: a random name and port range, so that it never meets another run's.
    int port = 20_000 + 10 * ThreadLocalRandom.current().nextInt(2_000);
    Map<String, String> settings =
        Map.of(
            "hazelcast.cluster-name",
            "kvtier-sim-test-" + Long.toHexString(ThreadLocalRandom.current().nextLong()),
            "hazelcast.port",
            Integer.toString(port),
            "hazelcast.port-count",
            "6",
            "hazelcast.members",
            "127.0.0.1",
            "hazelcast.join-timeout",
            "120s",
            "hazelcast.member-timeout",
            "5s",
            "hazelcast.cp-member-removal",
            "5s",
            "hazelcast.partition-count",
            "31");
    List<Path> logs = new ArrayList<>();
    for (int r = 0; r < 3; r++) {
      List<String> command = new ArrayList<>(java());
      command.addAll(options);
      command.addAll(more);
      command.addAll(
          List.of("--collective", "hazelcast", "--rank", Integer.toString(r), "--watchdog", "60"));
      settings.forEach((k, v) -> command.addAll(List.of("--collective-property", k + "=" + v)));
      if (r == 0) {
        command.addAll(List.of("--json", dir.resolve("hazelcast.json").toString()));
      }
      Path log = dir.resolve("rank-" + r + ".log");
      logs.add(log);
      processes.add(
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start());
    }
    List<Integer> statuses = new ArrayList<>();
    for (int r = 0; r < 3; r++) {
      statuses.add(await(processes.get(r), logs.get(r)));
      output.append(Files.readString(logs.get(r), StandardCharsets.UTF_8));
    }
    return statuses;
  }

  @Test
  void underMpirunAFailedRankStopsEveryRankProcessWithItsFailure() throws Exception {
    Path mpirun = onPath("mpirun").orElse(null);
    skipUnless(
        mpirun != null,
        "mpirun is not on the PATH; install it with"
            + " `apt-get install openmpi-bin libopenmpi-dev`");
    Availability mpi = Providers.named(CollectiveProvider.class, "mpi").availability();
    skipUnless(mpi.available(), "the mpi collective is unavailable here: " + mpi.reason());
    long seed = TestSeeds.seedFor("SimulateRankProcessesTest.mpi-fail");

    List<String> command =
        new ArrayList<>(
            List.of(
                mpirun.toString(),
                "--oversubscribe",
                "--bind-to",
                "none",
                "--mca",
                "btl",
                "self,vader",
                "-np",
                "4"));
    command.addAll(java());
    command.addAll(options(4, seed));
    command.addAll(
        List.of(
            "--collective",
            "mpi",
            "--fail-rank",
            "2",
            "--fail-tick",
            "20",
            "--fail-kind",
            "error",
            "--json",
            dir.resolve("mpi.json").toString()));
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("mpi.log").toFile());
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT", "1");
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    int status = await(builder.start(), dir.resolve("mpi.log"));
    String output = Files.readString(dir.resolve("mpi.log"), StandardCharsets.UTF_8);

    assertThat(status).as("mpirun's exit status; %s", reproduce(output)).isNotZero();
    assertFailedTogether(dir.resolve("mpi.json"), output, 4, "mpi", 2);
  }

  /**
   * Rank 0's JSON says RANK_FAILED naming the failed rank, and every rank's line says the same
   * failure without claiming equal digests.
   */
  private static void assertFailedTogether(
      Path json, String output, int ranks, String collective, int failed) throws IOException {
    Map<String, Object> j = json(json);
    assertThat(j).as(reproduce(output)).containsEntry("failure", "RANK_FAILED");
    String message = (String) j.get("failureMessage");
    assertThat(message).startsWith("RANK_FAILED: rank " + failed + " failed at tick ");
    // No wall-clock bound (it failed on a loaded machine while proving nothing more): a healthy
    // rank that waited for the watchdog would end with a collective timeout, not RANK_FAILED.
    for (int r = 0; r < ranks; r++) {
      assertThat(output)
          .as(reproduce(output))
          .containsPattern(
              "rank "
                  + r
                  + " of "
                  + ranks
                  + " \\("
                  + collective
                  + "\\): final replica digest [0-9a-f]{16}, equal on every rank: not compared"
                  + " \\(the run stopped\\); FAIL: "
                  + java.util.regex.Pattern.quote(message.lines().findFirst().orElseThrow()));
    }
  }

  /** Rank 0's JSON equals the local one but for the wall time; every rank's digest line too. */
  private static void assertSameResult(
      Map<String, Object> local, Path json, String output, int ranks, String collective)
      throws IOException {
    Map<String, Object> remote = withoutWallTime(json(json));
    assertThat(local.get("passed")).as("the local run passed").isEqualTo(true);
    assertThat(remote).as("rank 0's JSON; %s", reproduce(output)).isEqualTo(local);
    for (int r = 0; r < ranks; r++) {
      assertThat(output)
          .as(reproduce(output))
          .contains(
              "rank "
                  + r
                  + " of "
                  + ranks
                  + " ("
                  + collective
                  + "): final replica digest "
                  + local.get("replicaDigest")
                  + ", equal on every rank: yes; PASS");
    }
  }

  private static Map<String, Object> localRun(List<String> options) throws IOException {
    Path file = Files.createTempFile("kvtier-local-", ".json");
    try {
      List<String> args = new ArrayList<>(options);
      args.addAll(List.of("--json", file.toString()));
      StringWriter out = new StringWriter();
      int status =
          KvTierCli.run(new PrintWriter(out), new PrintWriter(out), args.toArray(String[]::new));
      assertThat(status).as("the local run: %s", out).isZero();
      return withoutWallTime(json(file));
    } finally {
      Files.deleteIfExists(file);
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(Path file) throws IOException {
    return (Map<String, Object>) TestJson.parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  private static Map<String, Object> withoutWallTime(Map<String, Object> json) {
    Map<String, Object> copy = new java.util.LinkedHashMap<>(json);
    assertThat(copy.remove("wallSeconds")).isNotNull();
    return copy;
  }

  private static String reproduce(String output) {
    return TestSeeds.reproduceLine(SimulateRankProcessesTest.class.getSimpleName())
        + "; output:\n"
        + output;
  }

  /** Waits for a job; past the hang guard, kills it and fails with what it printed. */
  private static int await(Process process, Path log) throws Exception {
    if (!process.waitFor(HANG_GUARD_SECONDS, TimeUnit.SECONDS)) {
      // SIGTERM first: mpirun then ends its ranks; a SIGKILL would orphan them.
      process.destroy();
      process.waitFor(10, TimeUnit.SECONDS);
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      throw new AssertionError(
          "the job did not end within "
              + HANG_GUARD_SECONDS
              + " s; "
              + reproduce(Files.readString(log, StandardCharsets.UTF_8)));
    }
    return process.exitValue();
  }

  /** A small JVM running the CLI from this test JVM's class path and module path entries. */
  static List<String> java() {
    List<String> entries = new ArrayList<>();
    entries.add(Path.of("target", "classes").toAbsolutePath().toString());
    for (String property : List.of("jdk.module.path", "java.class.path")) {
      for (String entry : System.getProperty(property, "").split(File.pathSeparator)) {
        if (!entry.isBlank() && !entries.contains(entry) && !entry.contains("surefire")) {
          entries.add(entry);
        }
      }
    }
    return List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        // Small, quick JVMs: up to 4 share 2 cores with the build.
        "-Xss4m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "--enable-native-access=ALL-UNNAMED",
        // The gguf model's Vector API: on the class path, named as bin/kvtier's module path
        // resolves it through io.kvtier.model.llama.
        "--add-modules",
        "jdk.incubator.vector",
        "-cp",
        String.join(File.pathSeparator, entries),
        KvTierCli.class.getName());
  }

  static Optional<Path> onPath(String program) {
    for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path candidate = Path.of(d, program);
      if (!d.isBlank() && Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  static void skipUnless(boolean condition, String reason) {
    if (!condition) {
      System.out.println("skipped: " + reason);
      Assumptions.abort("skipped: " + reason);
    }
  }
}
