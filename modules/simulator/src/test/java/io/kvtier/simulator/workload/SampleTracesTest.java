package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The small sample trace files under {@code src/test/resources/io/kvtier/simulator/workload}, one
 * per format, are made by this project's own writers; this test checks that they still equal what
 * the code generates. To regenerate them after a deliberate change, run from the repository root:
 *
 * <pre>
 * ./mvnw -B -pl modules/simulator -am test -Dtest=SampleTracesTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Dkvtier.samples.regenerate=true
 * </pre>
 */
public class SampleTracesTest {

  static final String TOKENS = "sample-tokens.jsonl";
  static final String MOONCAKE = "sample-mooncake.jsonl";

  /** Three conversations of three turns, small enough to read by eye. */
  static Trace tokenSample() {
    MultiturnWorkload w =
        new MultiturnWorkload(3, 3, 8, 4, 4, 0, 0, MultiturnWorkload.Order.FIFO, 20250101, 1000);
    Trace.Builder b = Trace.builder(9, 200);
    w.requests().forEach(r -> b.add(r.prompt(), 0, r.promptLength()));
    return b.build();
  }

  /**
   * Two conversations in 512-token blocks: each turn repeats the previous turn's block ids and
   * adds one, and the last block of every prompt is partial.
   */
  static BlockHashTrace mooncakeSample(String source) {
    BlockHashTrace.Builder b = BlockHashTrace.builder(source, 32000);
    long time = 0;
    for (int turn = 0; turn < 3; turn++) {
      for (int c = 0; c < 2; c++) {
        long[] ids = new long[turn + 1];
        for (int k = 0; k <= turn; k++) {
          ids[k] = 100L * c + k;
        }
        b.add(time, 512L * turn + 300, 64, ids);
        time += 250;
      }
    }
    return b.build();
  }

  @Test
  public void checkedInSamplesEqualWhatTheWritersProduce(@TempDir Path dir) throws IOException {
    Path tokens = dir.resolve(TOKENS);
    Path mooncake = dir.resolve(MOONCAKE);
    TraceJsonl.write(tokenSample(), tokens);
    mooncakeSample(mooncake.toString()).write(mooncake);

    if (Boolean.getBoolean("kvtier.samples.regenerate")) {
      Path resources = Path.of("src/test/resources/io/kvtier/simulator/workload");
      Files.createDirectories(resources);
      Files.copy(tokens, resources.resolve(TOKENS), StandardCopyOption.REPLACE_EXISTING);
      Files.copy(mooncake, resources.resolve(MOONCAKE), StandardCopyOption.REPLACE_EXISTING);
    }

    assertThat(resource(TOKENS)).isEqualTo(Files.readAllBytes(tokens));
    assertThat(resource(MOONCAKE)).isEqualTo(Files.readAllBytes(mooncake));
  }

  @Test
  public void samplesReadBackThroughTheSpecParser(@TempDir Path dir) throws IOException {
    Path tokens = Files.write(dir.resolve(TOKENS), resource(TOKENS));
    Path mooncake = Files.write(dir.resolve(MOONCAKE), resource(MOONCAKE));

    List<Request> chat = Workloads.parse("jsonl:" + tokens).requests().toList();
    List<Request> blocks = Workloads.parse("mooncake:" + mooncake).requests().toList();

    assertThat(chat)
        .extracting(Request::promptLength)
        .containsExactly(8, 8, 8, 16, 16, 16, 24, 24, 24);
    assertThat(chat.get(3).commonPrefixLength(chat.get(0))).isEqualTo(8);
    assertThat(blocks)
        .extracting(Request::promptLength)
        .containsExactly(300, 300, 812, 812, 1324, 1324);
    // turn 1 holds block 1's first 300 tokens, which turn 2 repeats before the rest of block 1
    assertThat(blocks.get(4).commonPrefixLength(blocks.get(2))).isEqualTo(812);
    assertThat(blocks.get(4).commonPrefixLength(blocks.get(3))).isZero();
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = SampleTracesTest.class.getResourceAsStream(name)) {
      assertThat(in)
          .as("test resource %s (to regenerate: see the class comment)", name)
          .isNotNull();
      return in.readAllBytes();
    }
  }
}
