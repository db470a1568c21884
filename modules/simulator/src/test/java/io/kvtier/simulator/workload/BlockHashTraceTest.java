package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class BlockHashTraceTest {

  @Test
  public void promptsExpandEachIdIntoItsBlockAndTruncateTheLast() {
    BlockHashTrace t =
        BlockHashTrace.builder("memory", 32000)
            .add(0, 1100, 7, 3, 4, 5)
            .add(10, 1024, 0, 3, 4)
            .add(10, 600, 1, 3, 9)
            .build();

    int[] first = t.prompt(0);
    assertThat(first).hasSize(1100);
    assertThat(Arrays.copyOfRange(first, 0, 512)).isEqualTo(block(3, 512));
    assertThat(Arrays.copyOfRange(first, 512, 1024)).isEqualTo(block(4, 512));
    assertThat(Arrays.copyOfRange(first, 1024, 1100)).isEqualTo(block(5, 76));
    // equal id prefixes give equal token prefixes, and the first different id diverges
    assertThat(t.prompt(1)).isEqualTo(Arrays.copyOf(first, 1024));
    int[] third = t.prompt(2);
    assertThat(Arrays.copyOf(third, 512)).isEqualTo(Arrays.copyOf(first, 512));
    assertThat(Arrays.copyOfRange(third, 512, 600)).isEqualTo(block(9, 88));
    assertThat(block(9, 88)).isNotEqualTo(block(4, 88));
    // a block's tokens are the first tokens of the SplitMix64 stream seeded by its id
    assertThat(block(5, 3)).isEqualTo(new SplitMix64(5).tokens(3, 32000));
  }

  private static int[] block(long id, int count) {
    return BlockHashTrace.blockTokens(id, count, 32000);
  }

  @Test
  public void requestsCarryTheTimestampAndTheOutputLength() {
    BlockHashTrace t =
        BlockHashTrace.builder("memory", 100).add(3, 2, 9, 1).add(8, 513, 0, 1, 2).build();

    List<Request> requests = t.requests().toList();

    assertThat(requests).extracting(Request::arrivalMillis).containsExactly(3L, 8L);
    assertThat(requests).extracting(Request::maxOutputTokens).containsExactly(9, 0);
    assertThat(requests).extracting(Request::promptLength).containsExactly(2, 513);
    assertThat(requests.get(1).commonPrefixLength(requests.get(0))).isEqualTo(2);
  }

  @Test
  public void writesTheMooncakeLayoutAndReadsItBack(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("trace.jsonl");
    BlockHashTrace t =
        BlockHashTrace.builder(file.toString(), 32000).add(0, 600, 5, 46, 47).build();

    t.write(file);

    assertThat(Files.readString(file))
        .isEqualTo(
            "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5,"
                + " \"hash_ids\": [46, 47]}\n");
    BlockHashTrace back = BlockHashTrace.read(file);
    assertThat(back.size()).isEqualTo(1);
    assertThat(back.hashIds(0)).containsExactly(46, 47);
    assertThat(back.prompt(0)).isEqualTo(t.prompt(0));
    assertThat(back.spec()).isEqualTo("mooncake:" + file);
  }

  @Test
  public void readsAnyKeyOrderDecimalTimestampsAndSkipsUnknownKeys() {
    String line =
        "{\"hash_ids\":[1],\"note\":\"a \\\"b\\\"\",\"output_length\":2,\"extra\":[-1, 2],"
            + "\"input_length\":10,\"timestamp\":12.75,\"score\":-0.5}";

    BlockHashTrace t = BlockHashTrace.parse(line, "memory", 32000);

    assertThat(t.requests().toList().getFirst().arrivalMillis()).isEqualTo(12);
    assertThat(t.prompt(0)).hasSize(10);
  }

  @Test
  public void errorsNameTheLine() {
    String good =
        "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}";

    assertError(
        good
            + "\n{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1,"
            + " \"hash_ids\": [1]}",
        2,
        "timestamp 4 is before the previous request's 5");
    assertError(
        good + "\n" + good.replace("[1]", "[1, 2]"),
        2,
        "input_length=1 needs 1 hash ids of 512-token blocks but the request has 2");
    assertError(good.replace(", \"output_length\": 1", ""), 1, "missing \"output_length\"");
    assertError(good + "\n\n" + good, 2, "line is blank");
    assertError(good.replace("5", "-5"), 1, "negative number");
    assertError(good.replace("}", "} x"), 1, "unexpected 'x' after the closing '}'");
    assertError(
        good.replace("\"input_length\": 1", "\"input_length\": 1.5"), 1, "expected an integer");
    assertError(
        good.replace("\"hash_ids\": [1]", "\"hash_ids\": [1], \"o\": {}"),
        1,
        "cannot skip the value '{' of an unknown key");
    assertError(
        good.replace("\"input_length\": 1,", "\"input_length\": 1, \"input_length\": 1,"),
        1,
        "\"input_length\" appears twice");
  }

  private static void assertError(String text, long line, String problem) {
    assertThatThrownBy(() -> BlockHashTrace.parse(text, "t.jsonl", 32000))
        .asInstanceOf(type(TraceFormatException.class))
        .satisfies(
            e -> {
              assertThat(e.getMessage()).startsWith("t.jsonl:" + line + ":");
              assertThat(e.getMessage()).contains(problem);
              assertThat(e.line()).isEqualTo(line);
            });
  }
}
