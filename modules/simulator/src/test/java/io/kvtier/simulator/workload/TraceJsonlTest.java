package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

import io.kvtier.testkit.SeedExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

@ExtendWith(SeedExtension.class)
public class TraceJsonlTest {

  @Test
  public void writesTheCanonicalForm() {
    Trace t = Trace.of(List.of(new int[] {1, 2, 3}, new int[] {0}, new int[] {2147483647, 10}));

    String text = new String(TraceJsonl.toBytes(t), StandardCharsets.US_ASCII);

    assertThat(text).isEqualTo("[1,2,3]\n[0]\n[2147483647,10]\n");
  }

  @Test
  public void randomTracesRoundTripThroughAFile(Random random, @TempDir Path dir) {
    List<int[]> prompts = new ArrayList<>();
    for (int r = 0; r < 50; r++) {
      int[] p = new int[1 + random.nextInt(3000)];
      for (int i = 0; i < p.length; i++) {
        p[i] = random.nextInt(10) == 0 ? random.nextInt(Integer.MAX_VALUE) : random.nextInt(100);
      }
      prompts.add(p);
    }
    Trace t = Trace.of(prompts);
    Path file = dir.resolve("t.jsonl");

    TraceJsonl.write(t, file);

    assertThat(TraceJsonl.read(file)).isEqualTo(t);
  }

  @Test
  public void readsJsonWhitespaceCrlfAndAMissingFinalNewline() {
    byte[] text = "[1, 2,\t3]\r\n [4 ]\n[5]".getBytes(StandardCharsets.US_ASCII);

    Trace t = TraceJsonl.read(text, "memory");

    assertThat(t).isEqualTo(Trace.of(List.of(new int[] {1, 2, 3}, new int[] {4}, new int[] {5})));
  }

  @Test
  public void errorsNameTheLineAndColumn() {
    assertError("[1]\n\n[2]\n", 2, 1, "line is blank");
    assertError("[1]\n[]\n", 2, 2, "empty array: every prompt needs at least one token id");
    assertError("[1,-2]\n", 1, 4, "negative token id: token ids must be >= 0");
    assertError("[1,x]\n", 1, 4, "expected a token id (a decimal integer) but found 'x'");
    assertError("[1,02]\n", 1, 4, "token id has a leading zero");
    assertError("[2147483648]\n", 1, 11, "token id is larger than 2147483647");
    assertError("[1.5]\n", 1, 3, "token id is not an integer");
    assertError(
        "[1,2\n", 1, 5, "expected ',' or ']' after a token id but found the end of the line");
    assertError("[1,2", 1, 5, "expected ',' or ']' after a token id but found the end of the file");
    assertError("[1] [2]\n", 1, 5, "expected the end of the line after ']' but found '['");
    assertError("{\"a\":1}\n", 1, 1, "a line must start with '[' but found '{'");
  }

  @Test
  public void aMissingFileIsAnUncheckedIoErrorNamingIt(@TempDir Path dir) {
    Path missing = dir.resolve("nope.jsonl");

    assertThatThrownBy(() -> TraceJsonl.read(missing))
        .hasMessageStartingWith("cannot read trace " + missing);
  }

  private static void assertError(String text, long line, int column, String problem) {
    assertThatThrownBy(() -> TraceJsonl.read(text.getBytes(StandardCharsets.US_ASCII), "t.jsonl"))
        .asInstanceOf(type(TraceFormatException.class))
        .satisfies(
            e -> {
              assertThat(e.getMessage()).startsWith("t.jsonl:" + line + ":" + column + ": ");
              assertThat(e.getMessage()).contains(problem);
              assertThat(e.line()).isEqualTo(line);
              assertThat(e.column()).isEqualTo(column);
              assertThat(e.source()).isEqualTo("t.jsonl");
            });
  }
}
