package io.kvtier.cli.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.cli.SharedTraces;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.simulator.replay.Replay;
import io.kvtier.simulator.replay.ReplayProgress;
import io.kvtier.simulator.replay.ReplaySummary;
import io.kvtier.simulator.replay.ReplaySweep;
import io.kvtier.simulator.replay.ReplayTrace;
import io.kvtier.simulator.workload.Workloads;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The replay report: one well-formed chart per group, one line per policy and the ceiling. */
class ReplayReportTest {
  private static final Pattern SVG = Pattern.compile("<svg[ >].*?</svg>", Pattern.DOTALL);
  private static ReplaySummary summary;
  private static String html;

  /** The Mooncake synthetic trace (each test skips without it). */
  private static final String TRACE = "mooncake:" + SharedTraces.mooncakeSynthetic();

  /** The first 1,000 requests of the trace, replayed once for the tests that read the page. */
  @BeforeAll
  static void replay() {
    if (!java.nio.file.Files.isRegularFile(SharedTraces.mooncakeSynthetic())) {
      return; // each test skips, saying why
    }
    ReplayTrace trace = ReplayTrace.of(Workloads.parse(TRACE), 1000);
    summary =
        Replay.run(
            trace,
            new ReplaySweep(
                    List.of(16),
                    List.of(250_000L, 500_000L, 1_000_000L),
                    List.of(),
                    List.of(0.0, 4.0),
                    List.of(0L),
                    List.of(EvictionPolicy.LRU, EvictionPolicy.LFU, EvictionPolicy.FIFO),
                    List.of(WritePolicy.WRITE_THROUGH))
                .configurations(),
            2,
            ReplayProgress.NONE);
    html = ReplayReport.html(summary, true, "kvtier replay --workload <x> & more");
  }

  @BeforeEach
  void needsTheTrace() {
    SharedTraces.assumeMooncakeSynthetic();
  }

  private static List<MiniXml.Element> charts() {
    List<MiniXml.Element> charts = new ArrayList<>();
    Matcher m = SVG.matcher(html);
    while (m.find()) {
      charts.add(MiniXml.parse(m.group()));
    }
    return charts;
  }

  @Test
  void oneChartPerHostSettingWithALinePerPolicyAndTheUnboundedCeiling() {
    List<MiniXml.Element> charts = charts();
    assertThat(charts).hasSize(2);
    assertThat(charts)
        .extracting(c -> c.attr("aria-label"))
        .containsExactly(
            "Hit rate over device capacity, page 16, no host tier, no L3, write_through",
            "Hit rate over device capacity, page 16, host 4 x device, no L3, write_through");
    for (MiniXml.Element chart : charts) {
      assertThat(chart.attr("xmlns")).isEqualTo("http://www.w3.org/2000/svg");
      List<MiniXml.Element> series =
          chart.descendants().filter(e -> "series".equals(e.attributes().get("class"))).toList();
      assertThat(series)
          .extracting(s -> s.attr("data-series"))
          .containsExactly("lru", "lfu", "fifo", "unbounded");
      for (MiniXml.Element s : series) {
        String[] points =
            s.children().stream()
                .filter(e -> e.name().equals("polyline"))
                .findFirst()
                .orElseThrow()
                .attr("points")
                .split(" ");
        assertThat(points).hasSize(3);
      }
      // the ceiling is flat: the same y at every capacity
      String[] ceiling =
          series.get(3).children().get(0).attr("points").replaceAll("[0-9.]+,", "").split(" ");
      assertThat(ceiling).containsOnly(ceiling[0]);
    }
  }

  /**
   * A sweep of snapshot intervals: one chart per interval, each with the usable hit rate of each
   * policy beside its matched one, and the usable rate in the table.
   */
  @Test
  void withSnapshotsEachIntervalHasItsChartAndTheUsableLineBesideTheMatchedOne() {
    ReplayTrace trace = ReplayTrace.of(Workloads.parse(TRACE), 300);
    ReplaySummary s =
        Replay.run(
            trace,
            new ReplaySweep(
                    List.of(512),
                    List.of(250_000L, 500_000L),
                    List.of(),
                    List.of(4.0),
                    List.of(0L),
                    List.of(EvictionPolicy.LRU),
                    List.of(WritePolicy.WRITE_THROUGH),
                    1,
                    List.of(2, 32))
                .configurations(),
            2,
            ReplayProgress.NONE);
    String page = ReplayReport.html(s, true, "kvtier replay --layer-mix full,recurrent");
    List<MiniXml.Element> charts = new ArrayList<>();
    Matcher m = SVG.matcher(page);
    while (m.find()) {
      charts.add(MiniXml.parse(m.group()));
    }
    assertThat(charts)
        .extracting(c -> c.attr("aria-label"))
        .containsExactly(
            "Hit rate over device capacity, page 512, host 4 x device, no L3, write_through,"
                + " snapshots every 2 pages",
            "Hit rate over device capacity, page 512, host 4 x device, no L3, write_through,"
                + " snapshots every 32 pages");
    for (MiniXml.Element chart : charts) {
      assertThat(
              chart
                  .descendants()
                  .filter(e -> "series".equals(e.attributes().get("class")))
                  .map(e -> e.attr("data-series")))
          .containsExactly("lru", "lru usable", "unbounded");
    }
    assertThat(page).contains("<th>usable hit %</th>").contains("<th>snapshot interval</th>");
  }

  @Test
  void thePageIsSelfContainedAndEscapesTheCommand() {
    assertThat(html)
        .startsWith("<!DOCTYPE html>")
        .doesNotContain("<script")
        .doesNotContain(" src=", " href=")
        .contains("kvtier replay --workload &lt;x&gt; &amp; more")
        .contains("arrival times matter only as order");
    // every result in the table: 18 configurations and 2 baselines
    assertThat(html.split("<tr>", -1)).hasSize(1 + 1 + 18 + 2);
  }
}
