package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

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

/** {@code kvtier replay}: the table, the JSON and CSV shape, the report, every usage error. */
@Timeout(120)
class ReplayCommandTest {
  /**
   * The Mooncake synthetic trace, from ../shared/traces (not in the repository; the tests that
   * read it skip where it is absent); its first 1,000 requests are the figures below.
   */
  static final String TRACE = "mooncake:" + SharedTraces.mooncakeSynthetic();

  /** A generator workload, for the tests that need no real trace. */
  static final String GENERATED = "multiturn";

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object o) {
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  private static List<Object> array(Object o) {
    return (List<Object>) o;
  }

  @Test
  void aSweepPrintsTheTableAndWritesOneJsonEntryPerConfiguration(@TempDir Path dir)
      throws IOException {
    Path json = dir.resolve("out.json");
    Path csv = dir.resolve("out.csv");
    Path report = dir.resolve("report.html");
    SharedTraces.assumeMooncakeSynthetic();
    CliRun run =
        run(
            "replay",
            "--workload",
            TRACE,
            "--requests",
            "1000",
            "--device-tokens",
            "250K,1M",
            "--host-ratio",
            "0,4",
            "--eviction",
            "lru,lfu",
            "--json",
            json.toString(),
            "--csv",
            csv.toString(),
            "--report",
            report.toString());

    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out())
        .contains("1,000 requests, 11,851,558 prompt tokens")
        .contains("arrival times matter only as order")
        .contains("unbounded")
        .contains("no-cache");
    assertThat(run.out().lines().filter(l -> l.startsWith("sweep"))).hasSize(8);

    Map<String, Object> doc = object(TestJson.parse(Files.readString(json)));
    assertThat(doc.get("requests")).isEqualTo(1000L);
    assertThat(doc.get("promptTokens")).isEqualTo(11_851_558L);
    List<Object> configurations = array(doc.get("configurations"));
    assertThat(configurations).hasSize(8);
    List<String> seen = new ArrayList<>();
    for (Object o : configurations) {
      Map<String, Object> c = object(o);
      seen.add(c.get("deviceTokens") + "/" + c.get("hostTokens") + "/" + c.get("eviction"));
      Map<String, Object> rate = object(c.get("hitRate"));
      assertThat(rate).containsOnlyKeys("device", "host", "l3", "total");
      double sum = 0;
      for (String tier : List.of("device", "host", "l3")) {
        double v = ((Number) rate.get(tier)).doubleValue();
        assertThat(v).isBetween(0.0, 1.0);
        sum += v;
      }
      assertThat(((Number) rate.get("total")).doubleValue()).isCloseTo(sum, within(3e-6));
      assertThat(object(c.get("requestHitRate"))).containsOnlyKeys("device", "host", "l3", "total");
      assertThat(c.get("kind")).isEqualTo("sweep");
      if (c.get("hostTokens").equals(0L)) {
        assertThat(rate.get("host")).isEqualTo(0.0);
        assertThat(c.get("backups")).isEqualTo(0L);
      } else {
        assertThat(((Number) c.get("backups")).longValue()).isPositive();
      }
    }
    assertThat(seen)
        .containsExactly(
            "250000/0/lru",
            "250000/0/lfu",
            "250000/1000000/lru",
            "250000/1000000/lfu",
            "1000000/0/lru",
            "1000000/0/lfu",
            "1000000/4000000/lru",
            "1000000/4000000/lfu");
    List<Object> baselines = array(doc.get("baselines"));
    assertThat(baselines)
        .extracting(b -> object(b).get("kind"))
        .containsExactly("unbounded", "no-cache");
    assertThat(object(object(baselines.get(1)).get("hitRate")).get("total")).isEqualTo(0.0);

    List<String> rows = Files.readAllLines(csv, StandardCharsets.UTF_8);
    assertThat(rows).hasSize(1 + 10);
    assertThat(rows.get(0)).startsWith("kind,pageSize,deviceTokens,hostTokens,l3Tokens,eviction,");
    assertThat(rows.get(1)).startsWith("sweep,16,250000,0,0,lru,write_through,1000,11851558,");

    String html = Files.readString(report);
    assertThat(html)
        .startsWith("<!DOCTYPE html>")
        .contains("<svg")
        .contains("kvtier replay --workload " + TRACE)
        .doesNotContain("<script");
  }

  @Test
  void bytesBecomeTokensThroughTheLayoutAndTheBenchmarkAndCutAreReported(@TempDir Path dir)
      throws IOException {
    Path json = dir.resolve("out.json");
    SharedTraces.assumeMooncakeSynthetic();
    CliRun run =
        run(
            "replay",
            "--workload",
            TRACE,
            "--requests",
            "50",
            "--kv-layout",
            "layers=2,kv-heads=1,head-dim=8,dtype-bytes=2",
            "--device-bytes",
            "64MiB",
            "--host-bytes",
            "128MiB",
            "--l3-bytes",
            "1GiB",
            "--page-size",
            "64",
            "--write-policy",
            "write_back",
            "--threads",
            "1",
            "--benchmark",
            "--json",
            json.toString());

    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out())
        .contains("the first 50 requests of the workload only")
        .contains("benchmark: trace prepared in")
        .contains("M prompt tokens per CPU second (per core)");
    Map<String, Object> c =
        object(array(object(TestJson.parse(Files.readString(json))).get("configurations")).get(0));
    // 2 layers x (K + V) x 8 elements x 2 bytes = 64 bytes per token
    assertThat(c.get("deviceTokens")).isEqualTo((64L << 20) / 64);
    assertThat(c.get("hostTokens")).isEqualTo((128L << 20) / 64);
    assertThat(c.get("l3Tokens")).isEqualTo((1L << 30) / 64);
    assertThat(c.get("writePolicy")).isEqualTo("write_back");
    assertThat(c.get("pageSize")).isEqualTo(64L);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "--eviction lru,oldest|--eviction: unknown eviction policy 'oldest': use one of lru, lfu,"
            + " fifo, mru, filo, priority, slru",
        "--write-policy through|--write-policy: unknown write policy 'through'",
        "--page-size 0|--page-size: '0' is not a whole number of at least 1",
        "--page-size 16,,32|--page-size '16,,32' has an empty item",
        "--device-tokens 1X|--device-tokens: '1X' is not a token count",
        "--device-tokens 8 --page-size 16|--device-tokens: a device of 8 tokens is less than one"
            + " page of --page-size 16",
        "--host-ratio -1|--host-ratio: '-1' is not a number >= 0",
        "--host-ratio 2 --host-tokens 1M|give the host capacity once",
        "--device-bytes 1GiB|--device-bytes needs --kv-layout",
        "--device-bytes 1GiB --device-tokens 1M|give --device-tokens or --device-bytes, not both",
        "--device-bytes 1GiB --kv-layout layers=2,heads=8|--kv-layout: 'heads=8' is not one of",
        "--device-bytes 1GiB --kv-layout layers=2|--kv-layout 'layers=2' lacks kv-heads=N",
        "--device-bytes lots --kv-layout layers=2,kv-heads=1,head-dim=8,dtype-bytes=2|"
            + "--device-bytes: size='lots' is not a size",
        "--write-policy write_back|--write-policy write_back needs a host tier, but --host-ratio"
            + " is not given",
        "--write-policy write_back --host-ratio 0,2|--host-ratio includes 0",
        "--l3-tokens 10M|--l3-tokens needs a host tier",
        "--ranks 2|--ranks 2 makes the byte capacities one rank's",
        "--ranks 0|--ranks=0 must be at least 1",
        "--device-bytes 1GiB --kv-layout layers=2,kv-heads=1,head-dim=8,dtype-bytes=2 --ranks 2|"
            + "--parallel tp over --ranks 2: the ranks must divide kv-heads=1; --parallel cp",
        "--device-bytes 1GiB --kv-layout layers=2,kv-heads=1,head-dim=8,dtype-bytes=2 --ranks 3"
            + " --parallel cp|--parallel cp over --ranks 3: a rank holds 1/3 of each position's",
        "--device-bytes 1GiB --kv-layout layers=2,kv-heads=1,head-dim=8,dtype-bytes=2 --ranks 4"
            + " --parallel cp --page-size 16,18|every --page-size to be a multiple of 4",
        "--parallel sp|--parallel: kvtier.parallel=sp is neither tp",
        "--threads 0|--threads=0 must be at least 1",
        "--requests 0|--requests=0 must be at least 1",
        "--layer-mix full,swa|element 2 of --layer-mix='full,swa' is 'swa'",
        "--layer-mix full,recurrent --snapshot-interval 0,8|--snapshot-interval=0,8 is out of"
            + " range: give 1 or more",
        "--layer-mix full,recurrent --snapshot-interval 2,x|--snapshot-interval: 'x' is not a"
            + " whole number",
        "--snapshot-interval 8|no --layer-mix is given (full attention only)",
        "--layer-mix full,swa:64 --snapshot-interval 8|--layer-mix full,swa:64 has no recurrent"
            + " layer",
      })
  void aUsageErrorExitsTwoNamingTheOption(String options, String message) {
    List<String> args = new ArrayList<>(List.of("replay", "--workload", GENERATED));
    if (!options.contains("--device-")) {
      args.addAll(List.of("--device-tokens", "1M"));
    }
    args.addAll(List.of(options.split(" ")));
    CliRun run = run(args.toArray(String[]::new));
    assertThat(run.status()).as(run.out() + run.err()).isEqualTo(2);
    assertThat(run.err()).contains(message).contains("see `kvtier replay --help`");
  }

  /**
   * With {@code --ranks 4 --parallel cp} the byte capacities are one rank's, which holds a
   * quarter of each token's KV: four times the tokens of one rank.
   */
  @Test
  void contextParallelRanksHoldTheirShareOfEachToken(@TempDir Path dir) throws IOException {
    List<Long> tokens = new ArrayList<>();
    for (String ranks : List.of("1", "4")) {
      Path json = dir.resolve("out-" + ranks + ".json");
      CliRun run =
          run(
              "replay",
              "--workload",
              GENERATED,
              "--requests",
              "20",
              "--kv-layout",
              "layers=2,kv-heads=1,head-dim=8,dtype-bytes=2",
              "--device-bytes",
              "1MiB",
              "--ranks",
              ranks,
              "--parallel",
              "cp",
              "--threads",
              "1",
              "--json",
              json.toString());
      assertThat(run.status()).as(run.err()).isZero();
      Map<String, Object> c =
          object(
              array(object(TestJson.parse(Files.readString(json))).get("configurations")).get(0));
      tokens.add((Long) c.get("deviceTokens"));
    }
    // 64 bytes per token on one rank, 16 on each of 4.
    assertThat(tokens).containsExactly((1L << 20) / 64, (1L << 20) / 16);
  }

  @Test
  void aMissingOrUnknownWorkloadOrCapacityIsAUsageError() {
    CliRun missing = run("replay", "--device-tokens", "1M");
    assertThat(missing.status()).isEqualTo(2);
    assertThat(missing.err()).contains("--workload");
    CliRun unknown = run("replay", "--workload", "zipf:1", "--device-tokens", "1M");
    assertThat(unknown.status()).isEqualTo(2);
    assertThat(unknown.err()).contains("--workload: unknown workload 'zipf'");
    CliRun noFile =
        run("replay", "--workload", "mooncake:/no/such/trace.jsonl", "--device-tokens", "1M");
    assertThat(noFile.status()).isEqualTo(2);
    assertThat(noFile.err()).contains("--workload: trace file").contains("does not exist");
    CliRun noDevice = run("replay", "--workload", GENERATED);
    assertThat(noDevice.status()).isEqualTo(2);
    assertThat(noDevice.err()).contains("--device-tokens (e.g. 1M,3M,10M) or --device-bytes");
  }

  @Test
  void aMalformedTraceOrAnUnwritableFileIsAnUnusableInput(@TempDir Path dir) throws IOException {
    Path bad = dir.resolve("bad.jsonl");
    Files.writeString(
        bad,
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1]}\n");
    CliRun malformed = run("replay", "--workload", "mooncake:" + bad, "--device-tokens", "1M");
    assertThat(malformed.status()).as(malformed.err()).isEqualTo(2);
    assertThat(malformed.err()).contains("kvtier replay: ").contains("needs 2 hash ids");
    CliRun unwritable =
        run(
            "replay",
            "--workload",
            GENERATED,
            "--requests",
            "5",
            "--device-tokens",
            "1M",
            "--json",
            dir.toString());
    assertThat(unwritable.status()).as(unwritable.err()).isEqualTo(2);
    assertThat(unwritable.err()).contains("--json " + dir + " is a directory");
  }

  @Test
  void theHelpSaysArrivalTimesAreOrderOnly() {
    CliRun help = run("replay", "--help");
    assertThat(help.status()).isZero();
    assertThat(help.out().replaceAll("\\s+", " "))
        .contains("arrival times matter only as order")
        .contains("lru, lfu, fifo, mru, filo, priority, slru");
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }
}
