package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a new user meets first (issue 17), through the command line's entry point: short errors in
 * the user's option names, exit 2 for what cannot start and 1 for a failed check, output paths
 * checked before the run, workloads that run sensibly by default and warnings where they do not,
 * summaries that add up, no temporary directories left behind.
 */
@Timeout(180)
class FirstRunTest {
  private static final String SMALL = "multiturn:conversations=6,turns=2,first=24,answer=4";

  private static void assertUsage(CliRun run, String firstLine) {
    assertThat(run.status()).as(run.out() + run.err()).isEqualTo(2);
    assertThat(run.firstErrLine()).isEqualTo(firstLine);
    assertThat(run.err().lines().toList())
        .as("the message, then where the usage is: no usage dump")
        .hasSize(2)
        .last()
        .isEqualTo("see `kvtier simulate --help`");
    assertThat(run.out()).isEmpty();
  }

  @Test
  void optionErrorsComeFirstInTheUsersOptionNames() {
    assertUsage(
        run("simulate", "--chunk", "0"),
        "kvtier simulate: --chunk=0 is out of range: give 1 or more (prompt tokens prefilled per"
            + " tick)");
    assertUsage(
        run("simulate", "--page-size", "0"),
        "kvtier simulate: --page-size=0 is out of range: give 1 or more (tokens per page)");
    assertUsage(
        run("simulate", "--device-pages", "-3"),
        "kvtier simulate: --device-pages=-3 is out of range: give 1 or more (device pool pages"
            + " per rank)");
    assertUsage(
        run("simulate", "--max-running", "0"),
        "kvtier simulate: --max-running=0 is out of range: give 1 or more (requests running at"
            + " once)");
    assertUsage(
        run("simulate", "--ranks", "-1"),
        "kvtier simulate: --ranks=-1 is out of range: give 1 to 8 (ranks in the run)");
    assertUsage(
        run("simulate", "--abort-probability", "1.5"),
        "kvtier simulate: --abort-probability=1.5 is out of range: give 0 to 1 (chance per tick)");
    assertUsage(
        run("simulate", "--host-ratio", "0", "--l3", "memory"),
        "kvtier simulate: --l3 memory needs a host tier, which its pages pass through, but"
            + " --host-ratio is 0: give --host-ratio above 1");
    CliRun typo = run("simulate", "--chunks", "4");
    assertThat(typo.status()).isEqualTo(2);
    assertThat(typo.firstErrLine()).startsWith("kvtier simulate: Unknown options: '--chunks'");
    assertThat(typo.err()).contains("--chunk").contains("see `kvtier simulate --help`");
  }

  @Test
  void inputsThatCannotBeUsedExitWithTwoAndOneLine(@TempDir Path dir) throws IOException {
    CliRun workload = run("simulate", "--workload", "nope");
    assertThat(workload.status()).isEqualTo(2);
    assertThat(workload.firstErrLine())
        .startsWith("kvtier simulate: unknown workload 'nope' in spec 'nope': known workloads");

    Path missing = dir.resolve("missing.jsonl");
    CliRun trace = run("simulate", "--workload", "jsonl:" + missing);
    assertThat(trace.status()).isEqualTo(2);
    assertThat(trace.err().lines()).hasSize(1);
    assertThat(trace.firstErrLine())
        .startsWith("kvtier simulate: trace file " + missing.toAbsolutePath())
        .contains("docs/WORKLOADS.md")
        .contains("fixed:multiturn")
        .doesNotContain("TraceJsonl.write");

    Path bad = dir.resolve("bad.jsonl");
    Files.writeString(bad, "{\"prompt\": [1, 2,\n", StandardCharsets.UTF_8);
    CliRun malformed = run("simulate", "--workload", "jsonl:" + bad);
    assertThat(malformed.status()).as(malformed.err()).isEqualTo(2);
    assertThat(malformed.err().lines()).hasSize(1);
    assertThat(malformed.firstErrLine()).startsWith("kvtier simulate: ").contains("bad.jsonl");

    CliRun store = run("simulate", "--l3", "nope");
    assertThat(store.status()).isEqualTo(2);
    assertThat(store.firstErrLine())
        .startsWith("kvtier simulate: --l3=nope: no KvStoreProvider named 'nope' was found")
        .contains("memory (");

    CliRun device = run("simulate", "--device", "nope");
    assertThat(device.status()).isEqualTo(2);
    assertThat(device.firstErrLine())
        .startsWith("kvtier simulate: --device=nope: no DeviceMemoryProvider named 'nope'");
  }

  @Test
  void anUnavailableDeviceExitsWithTwo() {
    CliRun cuda = run("simulate", "--device", "cuda", "--workload", SMALL, "--ticks", "5");
    if (cuda.status() == 0) {
      System.out.println("skipped: cuda is available here, so the run passes");
      return;
    }
    assertThat(cuda.status()).isEqualTo(2);
    assertThat(cuda.err().lines()).hasSize(1);
    assertThat(cuda.firstErrLine())
        .startsWith("kvtier simulate: --device cuda is unavailable here:");
    assertThat(cuda.out()).isEmpty();
  }

  @Test
  void outputPathsAreCheckedBeforeTheRun(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("a-file");
    Files.writeString(file, "x");
    CliRun unwritable = run("simulate", "--json", file.resolve("r.json").toString());
    assertThat(unwritable.status()).isEqualTo(2);
    assertThat(unwritable.firstErrLine())
        .isEqualTo(
            "kvtier simulate: --json "
                + file.resolve("r.json")
                + ": "
                + file
                + " is not a directory: give another path");
    assertThat(unwritable.out()).as("no run started").isEmpty();

    CliRun directory = run("simulate", "--report", dir.toString());
    assertThat(directory.status()).isEqualTo(2);
    assertThat(directory.firstErrLine()).contains("--report " + dir + " is a directory");
    assertThat(directory.out()).isEmpty();

    Path nested = dir.resolve("new/sub/r.json");
    CliRun created = run("simulate", "--workload", SMALL, "--json", nested.toString());
    assertThat(created.status()).as(created.err()).isZero();
    assertThat(nested).isRegularFile();
    assertThat(created.out()).contains("note      created the directory " + nested.getParent());
  }

  @Test
  void theNamedWorkloadsRunSensiblyByDefault() {
    for (String workload : List.of("multiturn", "shared-prefix", "doc-qa")) {
      CliRun run = run("simulate", "--workload", workload, "--ranks", "2", "--strict");
      assertThat(run.status()).as(workload + "\n" + run.out() + run.err()).isZero();
      assertThat(run.out())
          .contains("replayed  all ")
          .contains(" 0 rejected")
          .doesNotContain("warning")
          .contains("result    PASS\n");
    }
    // A parameter given replaces that one only: the other sizes stay the CLI's.
    CliRun more = run("simulate", "--workload", "multiturn:conversations=10", "--ranks", "1");
    assertThat(more.out())
        .contains("workload  multiturn:conversations=10,turns=4,first=96,answer=16,question=32,");
  }

  @Test
  void aRunThatRejectsMostRequestsSaysSoAndStrictFailsIt(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("r.json");
    String[] args = {
      "simulate", "--workload", "doc-qa:length=4000", "--ranks", "1", "--json", file.toString()
    };
    CliRun plain = run(args);
    assertThat(plain.status()).as(plain.err()).isZero();
    assertThat(plain.out())
        .contains("warning   24 of 24 requests did not finish: 24 rejected")
        .contains("result    PASS, with the warnings above (--strict makes a warning a failure)");
    @SuppressWarnings("unchecked")
    Map<String, Object> j = (Map<String, Object>) TestJson.parse(Files.readString(file));
    assertThat((List<?>) j.get("warnings")).hasSize(1);
    assertThat(j).containsEntry("passed", true).containsEntry("checksPassed", true);

    CliRun strict =
        run(Stream.concat(Stream.of(args), Stream.of("--strict")).toArray(String[]::new));
    assertThat(strict.status()).isEqualTo(1);
    assertThat(strict.out()).contains("result    FAIL: --strict");
    @SuppressWarnings("unchecked")
    Map<String, Object> s = (Map<String, Object>) TestJson.parse(Files.readString(file));
    assertThat(s).containsEntry("passed", false).containsEntry("checksPassed", true);
  }

  @Test
  void aWorkloadCutByTicksOrRequestsSaysHowMuchWasReplayed(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("r.json");
    CliRun ticks =
        run(
            "simulate",
            "--workload",
            "shared-prefix:requests=400",
            "--ranks",
            "1",
            "--ticks",
            "40",
            "--json",
            file.toString());
    assertThat(ticks.status()).as(ticks.err()).isZero();
    @SuppressWarnings("unchecked")
    Map<String, Object> j = (Map<String, Object>) TestJson.parse(Files.readString(file));
    long arrived = (Long) j.get("requests");
    assertThat(j).containsEntry("workloadRequests", 400L);
    assertThat((Long) j.get("unreadRequests")).isEqualTo(400 - arrived).isPositive();
    assertThat(ticks.out())
        .contains("replayed  " + arrived + " of 400 requests of the workload")
        .contains("the input ended at --ticks 40");

    CliRun requests = run("simulate", "--workload", SMALL, "--ranks", "1", "--requests", "5");
    assertThat(requests.out())
        .contains("replayed  5 of 12 requests of the workload (7 never arrived)")
        .contains("--requests 5 took no more");
    CliRun strict =
        run("simulate", "--workload", SMALL, "--ranks", "1", "--requests", "5", "--strict");
    assertThat(strict.status()).isEqualTo(1);
  }

  @Test
  void theTokenSummaryAddsUp(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("r.json");
    CliRun run =
        run("simulate", "--abort-probability", "0.05", "--ranks", "2", "--json", file.toString());
    assertThat(run.status()).as(run.err()).isZero();
    @SuppressWarnings("unchecked")
    Map<String, Object> j = (Map<String, Object>) TestJson.parse(Files.readString(file));
    long prompt = (Long) j.get("promptTokens");
    long reused = (Long) j.get("reusedTokens");
    long computed = (Long) j.get("computedPromptTokens");
    long unreached = (Long) j.get("unreachedPromptTokens");
    long decode = (Long) j.get("decodeTokens");
    assertThat(reused + computed + unreached).isEqualTo(prompt);
    assertThat(unreached).isNotNegative();
    assertThat(computed + decode).isEqualTo((Long) j.get("computedTokens"));
    String tokens =
        run.out().lines().filter(l -> l.startsWith("tokens ")).findFirst().orElseThrow();
    assertThat(tokens)
        .startsWith("tokens    " + prompt + " prompt = " + reused + " reused + " + computed)
        .endsWith("; " + decode + " decode tokens computed");
  }

  @Test
  void aFileStoreLeavesNoTemporaryDirectoryBehind(@TempDir Path dir) throws Exception {
    Path tmp = Files.createDirectories(dir.resolve("tmp"));
    int status =
        runProcess(
            tmp, "simulate", "--l3", "file", "--ranks", "2", "--workload", SMALL, "--ticks", "60");
    assertThat(status).isZero();
    try (Stream<Path> left = Files.list(tmp)) {
      assertThat(left.map(p -> p.getFileName().toString()))
          .noneMatch(n -> n.startsWith("kvtier-sim-l3-"));
    }
    // A directory the user gave is theirs: kept, with the pages in it.
    Path given = dir.resolve("store");
    CliRun kept =
        run(
            "simulate",
            "--l3",
            "file",
            "--l3-dir",
            given.toString(),
            "--ranks",
            "1",
            "--workload",
            SMALL);
    assertThat(kept.status()).as(kept.err()).isZero();
    assertThat(given).isDirectory();
  }

  /** Runs the CLI's main in a JVM of its own, with its own temp folder; its exit status. */
  private static int runProcess(Path tmp, String... args) throws Exception {
    List<String> entries = new ArrayList<>();
    entries.add(Path.of("target", "classes").toAbsolutePath().toString());
    for (String property : List.of("jdk.module.path", "java.class.path")) {
      for (String entry : System.getProperty(property, "").split(File.pathSeparator)) {
        if (!entry.isBlank() && !entries.contains(entry) && !entry.contains("surefire")) {
          entries.add(entry);
        }
      }
    }
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Djava.io.tmpdir=" + tmp,
                "-cp",
                String.join(File.pathSeparator, entries),
                KvTierCli.class.getName()));
    command.addAll(List.of(args));
    Path log = tmp.resolveSibling("process.log");
    Process p =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("the run did not end: " + Files.readString(log));
    }
    assertThat(p.exitValue()).as(Files.readString(log)).isZero();
    return p.exitValue();
  }
}
