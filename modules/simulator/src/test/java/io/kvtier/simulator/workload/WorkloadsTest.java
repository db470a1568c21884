package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class WorkloadsTest {

  @Test
  public void parsesGeneratorParametersAndLeavesTheRestAtTheirDefaults() {
    Workload w = Workloads.parse("shared-prefix:groups=16, alpha=0.5,seed=7");

    assertThat(w).isEqualTo(new SharedPrefixWorkload(16, 0.5, 2048, 128, 1024, 128, 0, 7, 32000));
    assertThat(Workloads.parse("multiturn:order=FIFO,think=250"))
        .isEqualTo(
            new MultiturnWorkload(
                128, 5, 512, 64, 128, 0, 250, MultiturnWorkload.Order.FIFO, 20250101, 32000));
    assertThat(Workloads.parse("doc-qa:order=tile,documents=3"))
        .isEqualTo(
            new DocumentQaWorkload(
                3, 20000, 2, 16, 32, DocumentQaWorkload.Order.TILE, 0, 20250101, 32000));
  }

  @Test
  public void unknownNamesListTheKnownOnes() {
    assertThatThrownBy(() -> Workloads.parse("zipf:alpha=1"))
        .hasMessage(
            "unknown workload 'zipf' in spec 'zipf:alpha=1': known workloads are"
                + " shared-prefix[:key=value,...], multiturn[:key=value,...],"
                + " doc-qa[:key=value,...], fixed:shared-prefix, fixed:multiturn, jsonl:<path>,"
                + " mooncake:<path>");
  }

  @Test
  public void unknownParametersListTheAcceptedOnes() {
    assertThatThrownBy(() -> Workloads.parse("shared-prefix:grups=3"))
        .hasMessage(
            "unknown parameter 'grups' of workload shared-prefix: accepted parameters are groups,"
                + " alpha, system, question, requests, output, rate, seed, vocab");
    assertThatThrownBy(() -> Workloads.parse("multiturn:documents=3"))
        .hasMessageContaining("accepted parameters are conversations, turns, first, answer,");
  }

  @Test
  public void badValuesNameTheKeyTheValueAndWhatIsExpected() {
    assertThatThrownBy(() -> Workloads.parse("shared-prefix:groups=many"))
        .hasMessage(
            "parameter groups='many' of workload shared-prefix is not valid: expected an integer"
                + " >= 1 (default groups=64)");
    assertThatThrownBy(() -> Workloads.parse("doc-qa:order=sorted"))
        .hasMessage(
            "parameter order='sorted' of workload doc-qa is not valid: expected random or tile or"
                + " interleave (default order=random)");
    assertThatThrownBy(() -> Workloads.parse("multiturn:rate=-2"))
        .hasMessageContaining("expected a finite number >= 0.0");
    assertThatThrownBy(() -> Workloads.parse("multiturn:turns"))
        .hasMessageStartingWith("malformed parameter 'turns' of workload multiturn:");
    assertThatThrownBy(() -> Workloads.parse("multiturn:turns=2,turns=3"))
        .hasMessage("parameter 'turns' of workload multiturn is given twice: give it once");
  }

  @Test
  public void fileWorkloadsNeedAnExistingPath(@TempDir Path dir) {
    assertThatThrownBy(() -> Workloads.parse("jsonl"))
        .hasMessage(
            "workload 'jsonl' in spec 'jsonl' needs a file path after the colon, e.g."
                + " jsonl:/path/to/trace.jsonl");
    Path missing = dir.resolve("missing.jsonl");
    assertThatThrownBy(() -> Workloads.parse("mooncake:" + missing))
        .hasMessageStartingWith("trace file " + missing.toAbsolutePath() + " of spec 'mooncake:");
  }

  @Test
  public void jsonlAndFixedTracesReplayPromptsAtTimeZero(@TempDir Path dir) {
    Path file = dir.resolve("t.jsonl");
    TraceJsonl.write(Trace.of(List.of(new int[] {1, 2}, new int[] {1, 3})), file);

    Workload w = Workloads.parse("jsonl:" + file);

    assertThat(w.spec()).isEqualTo("jsonl:" + file);
    assertThat(w.requests().map(Request::promptLength).toList()).containsExactly(2, 2);
    assertThat(w.requests().allMatch(r -> r.arrivalMillis() == 0 && r.maxOutputTokens() == 0))
        .isTrue();
    Workload fixed = Workloads.parse("fixed:multiturn");
    assertThat(fixed.spec()).isEqualTo("fixed:multiturn");
    assertThat(fixed.requests().count()).isEqualTo(640);
  }
}
