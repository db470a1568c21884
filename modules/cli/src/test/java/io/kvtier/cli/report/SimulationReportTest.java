package io.kvtier.cli.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.cli.KvTierCli;
import io.kvtier.simulator.MultiRankSimulator;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationResult;
import io.kvtier.simulator.SimulationTimeline;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier simulate --report}: the page's SVG charts parse as XML and hold the expected
 * series with finite coordinates; the page opens in headless Chromium when it is installed.
 */
@Timeout(180)
class SimulationReportTest {
  private static final String CHROMIUM = "/usr/bin/chromium";
  private static final Pattern SVG = Pattern.compile("<svg[ >].*?</svg>", Pattern.DOTALL);

  /** Coordinates are written with one decimal. */
  private static final Offset<Double> PIXEL = Offset.offset(0.051);

  private static final String WORKLOAD =
      "multiturn:conversations=8,turns=3,first=24,answer=4,question=8";

  @TempDir static Path dir;
  private static Path page;
  private static String html;
  private static String out;
  private static SimulationConfig config;
  private static SimulationResult result;
  private static SimulationTimeline timeline;

  @BeforeAll
  static void runSmallSimulationWithReport() throws IOException {
    page = dir.resolve("sub/r.html");
    StringWriter o = new StringWriter();
    StringWriter e = new StringWriter();
    int status =
        KvTierCli.run(
            new PrintWriter(o),
            new PrintWriter(e),
            "simulate",
            "--ranks",
            "2",
            "--workload",
            WORKLOAD,
            "--page-size",
            "4",
            "--device-pages",
            "48",
            "--host-ratio",
            "3",
            "--ticks",
            "200",
            // The builder's abort chance, so that the config below is the same run.
            "--abort-probability",
            "0.01",
            "--report",
            page.toString());
    assertThat(status).as(e.toString()).isZero();
    out = o.toString();
    html = Files.readString(page, StandardCharsets.UTF_8);
    // The same options again, straight to the simulator: same config, same timeline.
    config =
        SimulationConfig.builder()
            .ranks(2)
            .workload(WORKLOAD)
            .pageSize(4)
            .devicePages(48)
            .hostRatio(3)
            .ticks(200)
            .build();
    result = MultiRankSimulator.run(config);
    timeline = result.timeline();
  }

  private static List<MiniXml.Element> charts() {
    return charts(html);
  }

  private static List<MiniXml.Element> charts(String page) {
    List<MiniXml.Element> charts = new ArrayList<>();
    Matcher m = SVG.matcher(page);
    while (m.find()) {
      charts.add(MiniXml.parse(m.group()));
    }
    return charts;
  }

  private static MiniXml.Element chart(String id) {
    return chart(html, id);
  }

  private static MiniXml.Element chart(String page, String id) {
    return charts(page).stream()
        .filter(c -> c.attr("id").equals(id))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no chart " + id));
  }

  private static List<String> seriesNames(MiniXml.Element chart) {
    return chart
        .descendants()
        .filter(e -> "series".equals(e.attributes().get("class")))
        .map(e -> e.attr("data-series"))
        .toList();
  }

  private static MiniXml.Element series(MiniXml.Element chart, String name) {
    return chart
        .descendants()
        .filter(e -> name.equals(e.attributes().get("data-series")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no series " + name));
  }

  private static String[] points(MiniXml.Element chart, String name) {
    return series(chart, name).children().stream()
        .filter(e -> e.name().equals("polyline"))
        .findFirst()
        .orElseThrow()
        .attr("points")
        .split(" ");
  }

  private static double x(String point) {
    return Double.parseDouble(point.split(",")[0]);
  }

  private static double y(String point) {
    return Double.parseDouble(point.split(",")[1]);
  }

  /** The running sums of bar counts, first bin first. */
  private static double[] cumulative(List<Double> counts) {
    double[] sums = new double[counts.size()];
    double sum = 0;
    for (int i = 0; i < sums.length; i++) {
      sum += counts.get(i);
      sums[i] = sum;
    }
    return sums;
  }

  private static double coordinate(String value, double max) {
    double v = Double.parseDouble(value);
    assertThat(v).isFinite().isBetween(0.0, max);
    return v;
  }

  @Test
  void theSummaryStatesTheTtftModelAndTheReport() {
    assertThat(out)
        .contains(
            "TTFT model: 50 us per computed prompt token + 2 us per page loaded" + " from host")
        .containsPattern(
            "TTFT +mean \\d+\\.\\d\\d ms without cache, \\d+\\.\\d\\d" + " ms with cache")
        .containsPattern("p50 \\d+\\.\\d\\d / \\d+\\.\\d\\d ms")
        .contains("collectives")
        .contains("report    " + page);
  }

  @Test
  void thePageIsSelfContained() {
    // http:// appears only in the xmlns namespace names, which load nothing
    assertThat(html)
        .startsWith("<!DOCTYPE html>")
        .doesNotContain("<script", "<link", "<img")
        .doesNotContainPattern("(src|href)=")
        .doesNotContain("url(")
        .contains("TTFT model: 50 us");
    assertThat(charts())
        .extracting(c -> c.attr("id"))
        .containsExactly("hit-rate", "tier-occupancy", "ttft");
  }

  @Test
  void lineChartsHaveEverySeriesWithFiniteCoordinates() {
    for (String id : List.of("hit-rate", "tier-occupancy")) {
      MiniXml.Element chart = chart(id);
      assertThat(chart.name()).isEqualTo("svg");
      assertThat(chart.attr("xmlns")).isEqualTo("http://www.w3.org/2000/svg");
      List<String> expected =
          id.equals("hit-rate")
              ? List.of("device", "host", "l3", "total")
              : List.of("device in use", "device evictable", "host in use", "host evictable");
      assertThat(seriesNames(chart)).containsExactlyElementsOf(expected);
      double width = Double.parseDouble(chart.attr("width"));
      double height = Double.parseDouble(chart.attr("height"));
      for (String name : expected) {
        String[] points = points(chart, name);
        assertThat(points).hasSize(timeline.samples().size()).hasSizeGreaterThan(1);
        for (String point : points) {
          String[] xy = point.split(",");
          coordinate(xy[0], width);
          coordinate(xy[1], height);
        }
        long marks =
            series(chart, name).children().stream().filter(e -> e.name().equals("circle")).count();
        assertThat(marks).isEqualTo(points.length <= Svg.MAX_MARKS ? points.length : 0);
      }
    }
  }

  @Test
  void theOccupancyLinesAreTheTimelinesPageCounts() {
    MiniXml.Element chart = chart("tier-occupancy");
    double top = SimulationReport.occupancyTop(config);
    List<SimulationTimeline.Sample> samples = timeline.samples();
    String[] device = points(chart, "device in use");
    String[] host = points(chart, "host evictable");
    double first = samples.getFirst().tick();
    double last = samples.getLast().tick();
    for (int k = 0; k < samples.size(); k++) {
      SimulationTimeline.Sample s = samples.get(k);
      assertThat(x(device[k])).isCloseTo(Svg.px(s.tick(), first, last), PIXEL);
      assertThat(y(device[k]))
          .as("device pages in use at tick %d", s.tick())
          .isCloseTo(Svg.py(s.device().used(), top), PIXEL);
      assertThat(y(host[k]))
          .as("host pages evictable at tick %d", s.tick())
          .isCloseTo(Svg.py(s.host().evictable(), top), PIXEL);
    }
    // the run fills the device: the line leaves the floor
    assertThat(samples).anySatisfy(s -> assertThat(s.device().used()).isPositive());
  }

  /**
   * With {@code --l3 memory} on a working set above the host tier, the hit-rate chart's l3 line
   * has data and ends at the run's L3 hit rate, which the JSON result states as {@code
   * hitTokens.l3}.
   */
  @Test
  void anL3RunDrawsItsL3HitRate() throws IOException {
    Path l3Page = dir.resolve("l3.html");
    Path json = dir.resolve("l3.json");
    StringWriter e = new StringWriter();
    int status =
        KvTierCli.run(
            new PrintWriter(new StringWriter()),
            new PrintWriter(e),
            "simulate",
            "--ranks",
            "2",
            "--workload",
            "multiturn:conversations=24,turns=5,first=64,answer=8,question=16",
            "--page-size",
            "4",
            "--device-pages",
            "48",
            "--host-ratio",
            "1.5",
            "--chunk",
            "16",
            "--max-running",
            "4",
            "--ticks",
            "400",
            "--l3",
            "memory",
            "--l3-prefetch-threshold",
            "8",
            "--l3-step-us",
            "400",
            "--l3-timeout-ms",
            "6",
            "--json",
            json.toString(),
            "--report",
            l3Page.toString());
    assertThat(status).as(e.toString()).isZero();
    String result = Files.readString(json, StandardCharsets.UTF_8);
    long l3 = jsonNumber(result, "l3");
    long prompt = jsonNumber(result, "promptTokens");
    assertThat(l3).as("hitTokens.l3 of %s", result).isPositive();

    String[] line =
        points(chart(Files.readString(l3Page, StandardCharsets.UTF_8), "hit-rate"), "l3");
    assertThat(y(line[line.length - 1])).isCloseTo(Svg.py(100.0 * l3 / prompt, 100), PIXEL);
    // SVG y grows downwards: the line leaves the floor once L3 serves a prompt
    assertThat(y(line[line.length - 1])).isLessThan(y(line[0]));
    // An L3 store on: the page has the L3 chart, titled, with both series.
    MiniXml.Element l3Chart = chart(Files.readString(l3Page, StandardCharsets.UTF_8), "l3");
    assertThat(seriesNames(l3Chart)).containsExactly("from L3", "host hits");
    assertThat(title(l3Chart)).startsWith("Tokens loaded from L3");
    assertThat(charts(html)).extracting(c -> c.attr("id")).doesNotContain("l3");
  }

  private static String title(MiniXml.Element chart) {
    return chart
        .descendants()
        .filter(e -> "chart-title".equals(e.attributes().get("class")))
        .findFirst()
        .map(MiniXml.Element::text)
        .orElseThrow(() -> new AssertionError("no visible title in " + chart.attr("id")));
  }

  private static List<Double> tickValues(MiniXml.Element chart, String axis) {
    return chart
        .descendants()
        .filter(e -> axis.equals(e.attributes().get("class")))
        .map(e -> Double.parseDouble(e.text()))
        .toList();
  }

  /** A step of 1, 2 or 5 times a power of ten. */
  private static boolean round(double step) {
    double magnitude = Math.pow(10, Math.floor(Math.log10(step) + 1e-9));
    double m = step / magnitude;
    return Math.abs(m - 1) < 1e-6 || Math.abs(m - 2) < 1e-6 || Math.abs(m - 5) < 1e-6;
  }

  @Test
  void everyChartHasAVisibleTitleAndRoundTicks() {
    for (MiniXml.Element chart : charts()) {
      assertThat(title(chart)).as(chart.attr("id")).isNotBlank();
      for (String axis :
          chart.attr("id").equals("ttft") ? List.of("tick-y") : List.of("tick-x", "tick-y")) {
        List<Double> ticks = tickValues(chart, axis);
        assertThat(ticks).as("%s %s", chart.attr("id"), axis).hasSizeBetween(3, 7);
        double step = ticks.get(1) - ticks.get(0);
        assertThat(round(step))
            .as("%s %s step %s of %s", chart.attr("id"), axis, step, ticks)
            .isTrue();
        for (int k = 0; k < ticks.size(); k++) {
          double tick = ticks.get(k);
          assertThat(tick / step)
              .as("%s %s: %s", chart.attr("id"), axis, ticks)
              .isCloseTo(Math.rint(tick / step), Offset.offset(1e-6));
          if (k > 0) {
            assertThat(tick - ticks.get(k - 1)).isCloseTo(step, Offset.offset(1e-6));
          }
        }
      }
    }
    // The x ticks cover the run, from its first sample to within a step of its last.
    List<Double> x = tickValues(chart("hit-rate"), "tick-x");
    double last = timeline.samples().getLast().tick();
    assertThat(x.getFirst()).isEqualTo((double) timeline.samples().getFirst().tick());
    assertThat(x.getLast()).isLessThanOrEqualTo(last);
    assertThat(x.getLast() + (x.get(1) - x.get(0))).isGreaterThan(last);
    assertThat(Svg.roundStep(414)).isEqualTo(100);
    assertThat(Svg.roundStep(100)).isEqualTo(20);
    assertThat(Svg.roundStep(7)).isEqualTo(2);
  }

  @Test
  void theCostModelAppearsOnceAndTheWorkloadBreaksOnlyAtCommas() {
    assertThat(html.split("50 us per computed prompt token", -1)).hasSize(2);
    String workload = html.substring(html.indexOf("<p id=\"workload\">"));
    workload = workload.substring(0, workload.indexOf("</p>"));
    assertThat(workload).contains("conversations=8,<wbr/>turns=3,<wbr/>first=24,<wbr/>");
    assertThat(html).doesNotContain("word-break:break-all").contains("white-space:pre-wrap");
    assertThat(SimulationReport.breakAtCommas("a=1,b=<2>")).isEqualTo("a=1,<wbr/>b=&lt;2&gt;");
  }

  @Test
  void theDefaultWorkloadIsStatedPlainlyWithOneWhereTheTiersMatter() {
    String spec =
        SimulationConfig.DEFAULT_WORKLOAD + ",rate=0.0,think=0,order=random,seed=1,vocab=32000";
    assertThat(WorkloadNotes.lines(spec))
        .hasSize(2)
        .satisfies(l -> assertThat(l.get(0)).startsWith("This is the default workload: 48"))
        .satisfies(l -> assertThat(l.get(1)).contains("--workload doc-qa"));
    assertThat(WorkloadNotes.lines(WORKLOAD + ",rate=0.0")).isEmpty();
  }

  private static long jsonNumber(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":\\s*(\\d+)").matcher(json);
    assertThat(m.find()).as("%s in %s", name, json).isTrue();
    return Long.parseLong(m.group(1));
  }

  @Test
  void theHitRateEndsAtTheRunsHitRate() {
    MiniXml.Element chart = chart("hit-rate");
    String[] total = points(chart, "total");
    String[] host = points(chart, "host");
    double expected = 100.0 * result.hitTokens().total() / result.promptTokens();
    assertThat(expected).isPositive();
    assertThat(y(total[total.length - 1])).isCloseTo(Svg.py(expected, 100), PIXEL);
    assertThat(y(host[host.length - 1]))
        .isCloseTo(Svg.py(100.0 * result.hitTokens().host() / result.promptTokens(), 100), PIXEL);
    // SVG y grows downwards: nothing is cached before the first request finishes
    assertThat(y(total[total.length - 1])).isLessThan(y(total[0]));
  }

  @Test
  void theTtftHistogramCountsEveryRequestWithAndWithoutTheCache() {
    MiniXml.Element chart = chart("ttft");
    assertThat(seriesNames(chart)).containsExactly("without cache", "with cache");
    double height = Double.parseDouble(chart.attr("height"));
    double width = Double.parseDouble(chart.attr("width"));
    long requests =
        timeline.requests().stream().filter(SimulationTimeline.Request::hasFirstToken).count();
    assertThat(requests).isEqualTo(result.finished()).isPositive();
    List<List<Double>> counts = new ArrayList<>();
    for (String name : List.of("without cache", "with cache")) {
      counts.add(
          series(chart, name).children().stream()
              .filter(e -> e.name().equals("rect"))
              .map(
                  r -> {
                    coordinate(r.attr("x"), width);
                    coordinate(r.attr("y"), height);
                    coordinate(r.attr("height"), height);
                    String title = r.children().getFirst().text();
                    return Double.parseDouble(title.substring(title.lastIndexOf(' ') + 1));
                  })
              .toList());
    }
    assertThat(counts.get(0)).hasSameSizeAs(counts.get(1)).hasSizeGreaterThan(1);
    for (List<Double> c : counts) {
      assertThat(c.stream().mapToDouble(Double::doubleValue).sum()).isEqualTo(requests);
    }
    // every request's TTFT is no longer with the cache (reused tokens are not computed, and
    // both charge the same queueing), so at least as many requests fall in the first k bins
    double[] with = cumulative(counts.get(1));
    double[] without = cumulative(counts.get(0));
    for (int k = 0; k < with.length; k++) {
      assertThat(with[k])
          .as("requests in the first %d bins", k + 1)
          .isGreaterThanOrEqualTo(without[k]);
    }
    // and this run reuses a third of its prompt tokens: somewhere the cache is ahead
    assertThat(Arrays.stream(with).sum()).isGreaterThan(Arrays.stream(without).sum());
    assertThat(html).contains("<table id=\"ttft-percentiles\">");
  }

  @Test
  void textIsEscapedAndBrokenMarkupFailsTheParser() {
    assertThat(Svg.escape("<a & \"b\" 'c'>"))
        .isEqualTo("&lt;a &amp; &quot;b&quot; &#39;c&#39;&gt;");
    assertThatThrownBy(() -> MiniXml.parse("<svg><g></svg>"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> MiniXml.parse("<svg a=b/>"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> MiniXml.parse("<svg>a & b</svg>"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void thePageOpensInHeadlessChromium() throws IOException, InterruptedException {
    assumeTrue(
        Files.isExecutable(Path.of(CHROMIUM)),
        "skipped: " + CHROMIUM + " is not installed (apt-get install chromium)");
    Path profile = Files.createDirectories(dir.resolve("chromium-profile"));
    Path dom = dir.resolve("dom.html");
    Path log = dir.resolve("chromium.log");
    Process p =
        new ProcessBuilder(
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--user-data-dir=" + profile,
                "--dump-dom",
                page.toAbsolutePath().toUri().toString())
            .redirectOutput(dom.toFile())
            .redirectError(log.toFile())
            .start();
    if (!p.waitFor(90, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("chromium did not exit within 90 s; log:\n" + Files.readString(log));
    }
    String dumped = Files.readString(dom, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(Files.readString(log)).isZero();
    assertThat(dumped)
        .contains(
            "<svg",
            "id=\"hit-rate\"",
            "id=\"tier-occupancy\"",
            "id=\"ttft\"",
            "<polyline",
            "<rect");
  }
}
