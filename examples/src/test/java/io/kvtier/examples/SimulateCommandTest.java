package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvtier simulate}: the summary, the JSON fields, the exit status, usage errors. */
@Timeout(120)
class SimulateCommandTest {
  private static final String SMALL_WORKLOAD =
      "multiturn:conversations=8,turns=3,first=24,answer=4,question=8";

  private record Run(int status, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status = KvTierCli.run(new PrintWriter(out), new PrintWriter(err), args);
    return new Run(status, out.toString(), err.toString());
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(Path file) throws IOException {
    return (Map<String, Object>) MiniJson.parse(Files.readString(file, StandardCharsets.UTF_8));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object o) {
    return (Map<String, Object>) o;
  }

  @Test
  void aSmallRunPrintsTheTableAndWritesEveryJsonField(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("out/result.json");
    Run run = run("simulate", "--ranks", "2", "--workload", SMALL_WORKLOAD, "--page-size", "4",
        "--device-pages", "48", "--host-ratio", "3", "--write-policy", "write_back",
        "--eviction", "lfu", "--ack-delay", "heavy-tail", "--seed", "3", "--ticks", "200",
        "--json", file.toString());

    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out()).contains("kvtier simulate: 2 ranks, ack delay heavy-tail, seed 3")
        .containsPattern("device +\\d+ +\\d+\\.\\d%").containsPattern("host +\\d+ +\\d+\\.\\d%")
        .contains("collectives").contains("digests equal yes").contains("result    PASS");
    Map<String, Object> j = json(file);
    assertThat(j).containsEntry("ranks", 2L).containsEntry("seed", 3L)
        .containsEntry("replicaDigestsEqual", true).containsEntry("desyncs", 0L)
        .containsEntry("leakedPages", 0L).containsEntry("kvMismatches", 0L)
        .containsKeys("requests", "ticks", "promptTokens", "kvVerifiedPages", "wallSeconds");
    assertThat(object(j.get("hitTokens"))).containsKeys("device", "host", "l3");
    assertThat(object(j.get("collectives"))).containsKeys("calls", "idleTicks", "idleTickCalls")
        .containsEntry("idleTickCalls", 0L);
    assertThat((Long) j.get("requests")).isEqualTo(24L);
    assertThat((Double) j.get("wallSeconds")).isPositive();
    Map<String, Object> ttft = object(j.get("ttftMs"));
    assertThat((Long) ttft.get("requests")).isPositive()
        .isLessThanOrEqualTo((Long) j.get("requests"));
    // the estimate with the cache charges no more per request than the one without
    assertThat((Double) ttft.get("p50WithCache")).isPositive()
        .isLessThanOrEqualTo((Double) ttft.get("p50WithoutCache"));
    assertThat((Double) ttft.get("meanWithCache"))
        .isLessThan((Double) ttft.get("meanWithoutCache"));
    assertThat(ttft).containsKeys("p99WithCache", "p99WithoutCache");
  }

  @Test
  void theAcceptanceRunOfEightSkewedRanksPasses(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("out.json");
    Run run = run("simulate", "--ranks", "8", "--ack-delay", "skewed", "--seed", "7", "--json",
        file.toString());

    assertThat(run.status()).as(run.out() + run.err()).isZero();
    Map<String, Object> j = json(file);
    assertThat(j).containsEntry("replicaDigestsEqual", true).containsEntry("desyncs", 0L)
        .containsEntry("leakedPages", 0L).containsEntry("kvMismatches", 0L);
    assertThat((Long) j.get("kvVerifiedPages")).isPositive();
  }

  @Test
  void badOptionsAreUsageErrorsNamingTheValue() {
    Run delay = run("simulate", "--ack-delay", "slow");
    assertThat(delay.status()).isEqualTo(2);
    assertThat(delay.err()).contains("--ack-delay: unknown ack delay 'slow'")
        .contains("Usage: kvtier simulate");
    Run ranks = run("simulate", "--ranks", "9");
    assertThat(ranks.status()).isEqualTo(2);
    assertThat(ranks.err()).contains("ranks=9 must be between 1 and 8");
    Run workload = run("simulate", "--workload", "nonsense");
    assertThat(workload.status()).isEqualTo(1);
    assertThat(workload.err()).contains("unknown workload 'nonsense'");
  }

  @Test
  void theBenchmarkReportsEveryRankCount() {
    Run run = run("simulate", "--benchmark", "--workload", SMALL_WORKLOAD, "--ticks", "30",
        "--page-size", "4", "--device-pages", "48");

    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out().lines().filter(l -> l.matches(" +[1248] +\\d+ .* pass"))).hasSize(4);
  }
}
