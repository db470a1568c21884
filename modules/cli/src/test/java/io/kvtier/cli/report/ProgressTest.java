package io.kvtier.cli.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.simulator.SimulationResult.HitTokens;
import io.kvtier.simulator.SimulationTimeline;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/** The progress bar of ticks, silent off a terminal; the TTFT model's arithmetic. */
class ProgressTest {
  private static final Offset<Double> EXACT = Offset.offset(1e-9);

  @Test
  void noBarWhenStandardErrorIsNotATerminal() {
    // surefire runs the tests with standard error redirected to a file or pipe
    assertThat(System.console() == null || !System.console().isTerminal()).isTrue();
    PrintStream saved = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try {
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      Progress progress = Progress.onTerminal("ticks");
      progress.ticks(1, 3);
      progress.ticks(3, 3);
      progress.done();
    } finally {
      System.setErr(saved);
    }
    assertThat(captured.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void theBarCountsTicksRedrawsEachHundredthAndCountsOnWhileDraining() {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    Progress progress =
        new Progress(new PrintStream(captured, true, StandardCharsets.UTF_8), "ticks");
    for (long done = 1; done <= 210; done++) {
      progress.ticks(done, 200);
    }
    String drawn = captured.toString(StandardCharsets.UTF_8);
    // every 2 ticks up to 200, then every 2 while draining: 105 frames
    assertThat(drawn.split("\r", -1)).hasSize(106);
    assertThat(drawn)
        .contains("[" + "#".repeat(15) + " ".repeat(15) + "] 100/200 ticks")
        .contains("] 200/200 ticks")
        .doesNotContain("] 99/200")
        .endsWith("[" + "#".repeat(30) + "] 210 ticks (draining after 200)");
    captured.reset();
    progress.done();
    assertThat(captured.toString(StandardCharsets.UTF_8))
        .isEqualTo("\r" + " ".repeat("[] 210 ticks (draining after 200)".length() + 30) + "\r");
  }

  private static SimulationTimeline.Request request(
      int prompt, long device, long host, long arrival, long admit, long firstToken) {
    return request(prompt, device, host, 0, arrival, admit, firstToken);
  }

  private static SimulationTimeline.Request request(
      int prompt, long device, long host, long l3, long arrival, long admit, long firstToken) {
    return new SimulationTimeline.Request(
        1,
        arrival,
        admit,
        firstToken,
        prompt,
        new HitTokens(device, host, l3),
        RequestOutcome.FINISHED);
  }

  @Test
  void ttftModelChargesComputedTokensLoadedPagesL3PagesAndQueuedTicks() {
    TtftModel model = new TtftModel(10, 1, 7, 100);
    // 20 tokens: 8 on the device, 5 loaded from the host (2 pages of 4), 7 computed, 3 ticks
    // queued
    SimulationTimeline.Request r = request(20, 8, 5, 4, 7, 9);
    assertThat(model.withoutCacheUs(r)).isCloseTo(10.0 * 20 + 100.0 * 3, EXACT);
    assertThat(model.withCacheUs(r, 4)).isCloseTo(10.0 * 7 + 1.0 * 2 + 100.0 * 3, EXACT);
    assertThatThrownBy(() -> model.withCacheUs(r, 0)).hasMessageContaining("pageSize=0");
    // 30 tokens: 8 on the device, 5 from the host (2 pages), 9 from L3 (3 pages: each read from
    // the store, then loaded from the host), 8 computed, 3 ticks queued
    SimulationTimeline.Request fromL3 = request(30, 8, 5, 9, 4, 7, 9);
    assertThat(model.withCacheUs(fromL3, 4))
        .isCloseTo(10.0 * 8 + 1.0 * (2 + 3) + 7.0 * 3 + 100.0 * 3, EXACT);

    TtftModel.Estimate e =
        new TtftModel.Estimate(3, new double[] {300, 100, 200}, new double[] {50, 10, 30});
    assertThat(e.meanWithoutCacheUs()).isCloseTo(200, EXACT);
    assertThat(e.meanWithCacheUs()).isCloseTo(30, EXACT);
    assertThat(e.speedup()).isCloseTo(200.0 / 30, EXACT);
    assertThat(e.withoutCachePercentileUs(50)).isEqualTo(200);
    assertThat(e.withCachePercentileUs(99)).isEqualTo(50);
    assertThat(e.withCachePercentileUs(0)).isEqualTo(10);
    assertThat(e.withoutCacheUs()).containsExactly(100, 200, 300);
    assertThatThrownBy(() -> new TtftModel.Estimate(2, new double[1], new double[1]))
        .hasMessageContaining("requests=2");
    assertThatThrownBy(() -> e.withCachePercentileUs(101)).hasMessageContaining("101");

    assertThat(TtftModel.DEFAULT.describe())
        .startsWith(
            "50 us per computed prompt token + 2 us"
                + " per page loaded from host + 20 us per page read from the L3 store (then loaded from"
                + " host) + 1000 us per tick queued before admission");
    assertThatThrownBy(() -> new TtftModel(-1, 0, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("finite and >= 0");
    assertThatThrownBy(() -> new TtftModel(1, 1, -1, 1)).hasMessageContaining("-1.0 us per L3");
  }

  @Test
  void histogramBinsBothSamplesOnRoundWidths() {
    Histogram h = Histogram.of(new double[] {0, 1.9, 7.2}, new double[] {0.5, 0.5}, 4);
    // 7.2 / 4 = 1.8, rounded up to 2: bins 0-2, 2-4, 4-6, 6-8
    assertThat(h.width()).isEqualTo(2);
    assertThat(h.first()).containsExactly(2, 0, 0, 1);
    assertThat(h.second()).containsExactly(2, 0, 0, 0);
    assertThat(h.labels()).containsExactly("0-2", "2-4", "4-6", "6-8");
    assertThat(Histogram.of(new double[0], new double[0], 5).first()).containsExactly(0);
    assertThatThrownBy(() -> Histogram.of(new double[] {-1}, new double[0], 3))
        .hasMessageContaining("value -1.0");
  }
}
