package io.kvtier.collective.mpi;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Launches a main class of this module's tests as an {@code mpirun} job, each rank a JVM with the
 * test JVM's own module layout: its module path and class path, and the test classes patched into
 * {@code io.kvtier.collective.mpi} (where surefire put them). Loopback only ({@code btl
 * self,vader}), oversubscribed and unbound, since the ranks share a small machine; as root, with
 * Open MPI's two permission variables.
 */
final class MpiJob {

  private static final String MODULE = "io.kvtier.collective.mpi";

  /** What a job printed and how it ended. */
  record Result(int exitCode, boolean timedOut, String output) {}

  private MpiJob() {}

  /**
   * {@code mpirun} on the {@code PATH}.
   *
   * @return its path, if found
   */
  static Optional<Path> mpirun() {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator)) {
      Path candidate = Path.of(dir, "mpirun");
      if (Files.isExecutable(candidate)) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** Skips the calling test, printing why, unless mpirun and Open MPI's library are here. */
  static void assumeLauncher() {
    MpiTests.assumeLibrary();
    if (mpirun().isEmpty()) {
      String reason =
          "skipped: mpirun is not on the PATH; install it with"
              + " `apt-get install openmpi-bin libopenmpi-dev`";
      System.out.println(reason);
      Assumptions.abort(reason);
    }
  }

  /**
   * Runs {@code mainClass} as {@code ranks} processes and waits for the job.
   *
   * @param ranks the number of ranks
   * @param mainClass a main class of this module (main or test sources)
   * @param args its arguments
   * @param timeout how long the job may run before it is killed
   * @param log where the job's output goes
   * @return the exit code, whether it was killed, and its output
   */
  static Result run(int ranks, String mainClass, List<String> args, Duration timeout, Path log)
      throws IOException, InterruptedException {
    List<String> command =
        new ArrayList<>(
            List.of(
                mpirun().orElseThrow().toString(),
                "--oversubscribe",
                "--bind-to",
                "none",
                "--mca",
                "btl",
                "self,vader",
                "-np",
                Integer.toString(ranks)));
    command.addAll(javaCommand(mainClass));
    command.addAll(args);
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT", "1");
    builder.environment().put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    Process process = builder.start();
    boolean finished = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (!finished) {
      // SIGTERM first: mpirun then ends its ranks; a SIGKILL would orphan them.
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    }
    String output = Files.readString(log, StandardCharsets.UTF_8);
    return new Result(finished ? process.exitValue() : -1, !finished, output);
  }

  private static List<String> javaCommand(String mainClass) {
    String testClasses = System.getProperty("kvtier.mpi.test-classes");
    if (testClasses == null) {
      throw new IllegalStateException(
          "system property kvtier.mpi.test-classes is not set: run"
              + " the test through Maven (collective-mpi/pom.xml sets it)");
    }
    List<String> java =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                // Small, quick JVMs: up to 4 share 2 cores with the build.
                "-Xss4m",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--enable-native-access=" + MODULE,
                "--module-path",
                System.getProperty("jdk.module.path"),
                "--patch-module",
                MODULE + "=" + testClasses,
                "--add-reads",
                MODULE + "=ALL-UNNAMED"));
    String classPath = System.getProperty("java.class.path", "");
    if (!classPath.isBlank()) {
      java.add("--class-path");
      java.add(classPath);
    }
    java.add("-m");
    java.add(MODULE + "/" + mainClass);
    return java;
  }
}
