package io.kvtier.examples.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.sim.MultiRankSimulator;
import io.kvtier.testkit.sim.SimulationConfig;
import io.kvtier.testkit.sim.SimulationResult;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/** The progress bar stays silent off a terminal; the TTFT model's arithmetic. */
class ProgressTest {
  @Test
  void noBarWhenStandardErrorIsNotATerminal() {
    // surefire runs the tests with standard error redirected to a file or pipe
    assertThat(System.console() == null || !System.console().isTerminal()).isTrue();
    PrintStream saved = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try {
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      Progress progress = Progress.onTerminal(3, "runs");
      progress.show(0);
      progress.show(3);
      progress.done();
    } finally {
      System.setErr(saved);
    }
    assertThat(captured.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void ttftModelChargesComputedTokensAndLoadedPages() {
    SimulationResult r = MultiRankSimulator.run(SimulationConfig.builder()
        .ranks(1).workload("multiturn:conversations=4,turns=2,first=16,answer=4,question=8")
        .pageSize(4).devicePages(32).ticks(100).build());
    TtftModel.Estimate e = new TtftModel(10, 1).estimate(r, 4);

    long admitted = r.requests() - r.rejected();
    long pages = (r.hitTokens().host() + 3) / 4;
    assertThat(e.admitted()).isEqualTo(admitted);
    assertThat(e.withoutCacheUs()).isCloseTo(10.0 * r.promptTokens() / admitted,
        Offset.offset(1e-9));
    assertThat(e.withCacheUs()).isCloseTo(
        (10.0 * (r.promptTokens() - r.hitTokens().total()) + pages) / admitted,
        Offset.offset(1e-9));
    assertThat(e.withCacheUs()).isLessThanOrEqualTo(e.withoutCacheUs());
    assertThat(TtftModel.DEFAULT.describe())
        .startsWith("50 us per computed prompt token + 2 us per page loaded from host");
    assertThatThrownBy(() -> new TtftModel(-1, 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("finite and >= 0");
  }
}
