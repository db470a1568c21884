package io.kvtier.cli;

import static io.kvtier.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier simulate --kv-layout --device-bytes --parallel}: one rank's bytes become its
 * device pages, a rank holding 1/R of each token's KV (tp or cp), so R ranks keep R times the
 * tokens of one; every split the ranks cannot make is a usage error naming the option.
 */
@Timeout(120)
class SimulateByteCapacityTest {

  /** 2 layers of one 8-element head of 2-byte elements: 64 bytes per token. */
  private static final String LAYOUT = "layers=2,kv-heads=1,head-dim=8,dtype-bytes=2";

  /** Four 256-token documents asked four times: 1,024 tokens of documents. */
  private static final String DOCS = "doc-qa:documents=4,length=256,asks=4,question=16,output=8";

  @Test
  void everySplitTheRanksCannotMakeIsAUsageErrorNamingTheOption() {
    String[][] cases = {
      {"--device-bytes 1MiB", "--device-bytes needs --kv-layout"},
      {"--parallel cp", "--parallel needs --kv-layout"},
      {
        "--kv-layout " + LAYOUT + " --ranks 2",
        "--parallel tp over --ranks 2: the ranks must divide kv-heads=1"
      },
      {
        "--kv-layout " + LAYOUT + " --ranks 3 --parallel cp",
        "--parallel cp over --ranks 3: a rank holds 1/3 of each position's kv-heads x head-dim = 8"
      },
      {
        "--kv-layout " + LAYOUT + " --ranks 4 --parallel cp --page-size 18",
        "--parallel cp over --ranks 4 needs every --page-size to be a multiple of 4"
      },
      {
        "--kv-layout " + LAYOUT + " --parallel sp",
        "--parallel=sp: kvtier.parallel=sp is neither tp"
      },
      {"--kv-layout layers=2", "--kv-layout 'layers=2' lacks kv-heads=N"},
      {"--kv-layout layers=2,kv-heads=0,head-dim=8,dtype-bytes=2", "--kv-layout kv-heads: '0'"},
      {
        "--kv-layout " + LAYOUT + " --device-bytes 1MiB --device-pages 10",
        "--device-pages and --device-bytes both give the device pool"
      },
      {
        "--kv-layout " + LAYOUT + " --ranks 1 --device-bytes 1000",
        "--device-bytes=1000 holds no page: a page of 16 tokens takes 1024 bytes"
      },
      {
        "--kv-layout " + LAYOUT + " --ranks 1 --device-bytes lots",
        "--device-bytes='lots' is not a size"
      },
      {
        "--kv-layout " + LAYOUT + " --ranks 1 --device-bytes 1TiB",
        "pages of 16 tokens per rank, more than the simulator's 4194304"
      },
      {
        "--kv-layout " + LAYOUT + " --device-bytes 1MiB --benchmark",
        "--device-bytes gives the pages of one rank count, and --benchmark"
      },
    };
    for (String[] c : cases) {
      List<String> args = new ArrayList<>(List.of("simulate"));
      args.addAll(Arrays.asList(c[0].split(" ")));
      CliRun bad = run(args.toArray(String[]::new));
      assertThat(bad.status()).as(c[0] + ": " + bad.err()).isEqualTo(2);
      assertThat(bad.firstErrLine()).as(c[0]).startsWith("kvtier simulate: ").contains(c[1]);
      assertThat(bad.err()).contains("see `kvtier simulate --help`");
    }
  }

  /**
   * The same 64 KiB per rank: one rank holds 64 pages of 16 tokens (1,024 tokens at 64 bytes each),
   * four cp ranks 256 each (16 bytes per token on a rank), so the four keep the documents on the
   * device and hit more.
   */
  @Test
  void contextParallelRanksKeepRTimesTheTokensOfOne(@TempDir Path dir) throws IOException {
    Map<String, Object> one = simulate(dir, "1", "cp");
    Map<String, Object> four = simulate(dir, "4", "cp");
    Map<String, Object> c1 = object(one.get("capacity"));
    Map<String, Object> c4 = object(four.get("capacity"));
    assertThat(c1)
        .containsEntry("parallel", "cp")
        .containsEntry("kvBytesPerToken", 64L)
        .containsEntry("rankKvBytesPerToken", 64L)
        .containsEntry("devicePages", 64L)
        .containsEntry("deviceBytesPerRank", 65536L);
    assertThat(c4)
        .containsEntry("kvBytesPerToken", 64L)
        .containsEntry("rankKvBytesPerToken", 16L)
        .containsEntry("devicePages", 256L)
        .containsEntry("deviceBytesPerRank", 65536L);
    long hits1 = (Long) object(one.get("hitTokens")).get("device");
    long hits4 = (Long) object(four.get("hitTokens")).get("device");
    assertThat(hits4).isGreaterThan(hits1);
    assertThat(one.get("passed")).isEqualTo(true);
    assertThat(four.get("passed")).isEqualTo(true);
  }

  /** tp gives a rank the same 1/R share where the ranks divide the heads: the same pages. */
  @Test
  void tensorParallelRanksHoldTheSameShare(@TempDir Path dir) throws IOException {
    CliRun run =
        run(
            "simulate",
            "--ranks",
            "2",
            "--kv-layout",
            "layers=2,kv-heads=2,head-dim=8,dtype-bytes=2",
            "--device-bytes",
            "64KiB",
            "--parallel",
            "tp",
            "--host-ratio",
            "0",
            "--workload",
            DOCS,
            "--ticks",
            "200");
    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out())
        .contains(
            "capacity  64 KV bytes per token on each of 2 tp rank(s) (128 on one): --device-bytes"
                + " 64KiB holds 64 device pages of 16 tokens per rank (65,536 bytes), 1,024 tokens");
  }

  private static Map<String, Object> simulate(Path dir, String ranks, String parallel)
      throws IOException {
    Path json = dir.resolve("out-" + ranks + ".json");
    CliRun run =
        run(
            "simulate",
            "--ranks",
            ranks,
            "--kv-layout",
            LAYOUT,
            "--device-bytes",
            "64KiB",
            "--parallel",
            parallel,
            "--host-ratio",
            "0",
            "--workload",
            DOCS,
            "--ticks",
            "400",
            "--json",
            json.toString());
    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out()).contains("capacity  ");
    @SuppressWarnings("unchecked")
    Map<String, Object> result =
        (Map<String, Object>) TestJson.parse(Files.readString(json, StandardCharsets.UTF_8));
    return result;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object o) {
    return (Map<String, Object>) o;
  }
}
