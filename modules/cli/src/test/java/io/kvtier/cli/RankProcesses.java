package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.Availability;
import io.kvtier.spi.CollectiveProvider;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code kvtier serve} rank processes of a test (JVMs running {@link KvTierCli} on the test's
 * class path, {@link SimulateRankProcessesTest#java()}), started as mpirun jobs or as hazelcast
 * ranks with their third CP member, and killed at {@link #close()}. Every wait is bounded by
 * {@link #HANG_GUARD_SECONDS} and fails with what the process printed.
 */
final class RankProcesses implements AutoCloseable {
  static final long HANG_GUARD_SECONDS = 120;

  private static final Pattern LISTENING = Pattern.compile("listening on http://[^:]+:(\\d+),");
  private static final Pattern SERVING_PID = Pattern.compile("serves in process (\\d+);");

  private final Path dir;
  private final List<Process> processes = new ArrayList<>();

  /**
   * Processes whose logs go to {@code dir}.
   *
   * @param dir the test's directory
   */
  RankProcesses(Path dir) {
    this.dir = dir;
  }

  /** Where rank 0 listens and which process it is. */
  record Serving(URI base, long pid) {}

  /**
   * The {@code index}th process started.
   *
   * @param index from 0, in start order
   * @return the process
   */
  Process process(int index) {
    return processes.get(index);
  }

  /** Starts a process, killed (with its descendants) at {@link #close()}. */
  Process start(ProcessBuilder builder) throws IOException {
    Process p = builder.start();
    processes.add(p);
    return p;
  }

  /**
   * Starts rank 0 and rank 1 of {@code kvtier serve} over hazelcast on loopback, each with
   * {@code serve} (the command and its options), and the third CP member the collective needs
   * ({@code kvtier cp-member}), in a cluster of its own (a random name and port range, so that it
   * never meets another run's); returns the ranks' logs.
   */
  List<Path> startHazelcastRanks(List<String> serve, String clusterPrefix) throws IOException {
    int port = 20_000 + 10 * ThreadLocalRandom.current().nextInt(2_000);
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put(
        "hazelcast.cluster-name",
        clusterPrefix + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    settings.put("hazelcast.port", Integer.toString(port));
    settings.put("hazelcast.port-count", "4");
    settings.put("hazelcast.members", "127.0.0.1");
    settings.put("hazelcast.join-timeout", "120s");
    settings.put("hazelcast.member-timeout", "5s");
    settings.put("hazelcast.cp-member-removal", "5s");
    settings.put("hazelcast.partition-count", "31");
    List<Path> logs = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      List<String> command = new ArrayList<>(SimulateRankProcessesTest.java());
      command.addAll(serve);
      command.addAll(
          List.of("--ranks", "2", "--collective", "hazelcast", "--rank", Integer.toString(r)));
      settings.forEach((k, v) -> command.addAll(List.of("--collective-property", k + "=" + v)));
      Path log = dir.resolve("rank-" + r + ".log");
      logs.add(log);
      start(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()));
    }
    List<String> cpMember = new ArrayList<>(SimulateRankProcessesTest.java());
    cpMember.add("cp-member");
    settings.forEach((k, v) -> cpMember.add(k + "=" + v));
    start(
        new ProcessBuilder(cpMember)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("cp-member.log").toFile()));
    return logs;
  }

  /**
   * Starts {@code kvtier serve} as an mpirun job of 2 ranks, its output in {@code log}; skips
   * the test, saying why, without mpirun or the mpi collective.
   */
  Process startMpiJob(List<String> serve, Path log) throws IOException {
    List<String> command = new ArrayList<>(mpirunPrefix(mpirun()));
    command.addAll(SimulateRankProcessesTest.java());
    command.addAll(serve);
    command.addAll(List.of("--collective", "mpi"));
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    // Open MPI refuses to run as root (as CI does) without both variables.
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT", "1");
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    return start(builder);
  }

  /** mpirun on the PATH with the mpi collective available, or the test is skipped saying why. */
  static Path mpirun() {
    Path mpirun = SimulateRankProcessesTest.onPath("mpirun").orElse(null);
    SimulateRankProcessesTest.skipUnless(
        mpirun != null,
        "mpirun is not on the PATH; install it with"
            + " `apt-get install openmpi-bin libopenmpi-dev`");
    Availability mpi = Providers.named(CollectiveProvider.class, "mpi").availability();
    SimulateRankProcessesTest.skipUnless(
        mpi.available(), "the mpi collective is unavailable here: " + mpi.reason());
    return mpirun;
  }

  /** mpirun's options for 2 oversubscribed, unbound ranks on loopback. */
  static List<String> mpirunPrefix(Path mpirun) {
    return List.of(
        mpirun.toString(),
        "--oversubscribe",
        "--bind-to",
        "none",
        "--mca",
        "btl",
        "self,vader",
        "-np",
        "2");
  }

  /** Waits until a log has a line. */
  static void awaitLine(Path log, String line) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
    while (!output(log).contains(line)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no line \"" + line + "\" in " + output(log));
      }
      Thread.sleep(20);
    }
  }

  /** Waits until rank 0's log says where it listens; fails if the job ended first. */
  static Serving awaitServing(Process job, Path log) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
    while (System.nanoTime() < deadline) {
      String text = output(log);
      Matcher port = LISTENING.matcher(text);
      Matcher pid = SERVING_PID.matcher(text);
      if (port.find() && pid.find()) {
        return new Serving(
            URI.create("http://127.0.0.1:" + port.group(1)), Long.parseLong(pid.group(1)));
      }
      assertThat(job.isAlive()).as("the job ended before rank 0 served: %s", text).isTrue();
      Thread.sleep(20);
    }
    throw new AssertionError(
        "rank 0 did not serve within " + HANG_GUARD_SECONDS + " s; " + output(log));
  }

  /** Waits for a process; past the hang guard, kills it and fails with what it printed. */
  static int await(Process process, Path log) throws Exception {
    if (!process.waitFor(HANG_GUARD_SECONDS, TimeUnit.SECONDS)) {
      process.destroy();
      process.waitFor(10, TimeUnit.SECONDS);
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      throw new AssertionError(
          "the process did not end within " + HANG_GUARD_SECONDS + " s; " + output(log));
    }
    return process.exitValue();
  }

  /** What a process printed so far. */
  static String output(Path log) {
    try {
      return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      return "(cannot read " + log + ": " + e.getMessage() + ")";
    }
  }

  /** Kills the processes still running, and their descendants. */
  @Override
  public void close() {
    for (Process p : processes) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
  }
}
