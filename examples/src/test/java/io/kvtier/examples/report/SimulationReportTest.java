package io.kvtier.examples.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.examples.KvTierCli;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  @TempDir static Path dir;
  private static Path page;
  private static String html;
  private static String out;

  @BeforeAll
  static void runSmallSimulationWithReport() throws IOException {
    page = dir.resolve("sub/r.html");
    StringWriter o = new StringWriter();
    StringWriter e = new StringWriter();
    int status = KvTierCli.run(new PrintWriter(o), new PrintWriter(e), "simulate", "--ranks",
        "2", "--workload", "multiturn:conversations=8,turns=3,first=24,answer=4,question=8",
        "--page-size", "4", "--device-pages", "48", "--host-ratio", "3", "--ticks", "200",
        "--report", page.toString());
    assertThat(status).as(e.toString()).isZero();
    out = o.toString();
    html = Files.readString(page, StandardCharsets.UTF_8);
  }

  private static List<MiniXml.Element> charts() {
    List<MiniXml.Element> charts = new ArrayList<>();
    Matcher m = SVG.matcher(html);
    while (m.find()) {
      charts.add(MiniXml.parse(m.group()));
    }
    return charts;
  }

  private static MiniXml.Element chart(String id) {
    return charts().stream().filter(c -> c.attr("id").equals(id)).findFirst()
        .orElseThrow(() -> new AssertionError("no chart " + id));
  }

  private static List<String> seriesNames(MiniXml.Element chart) {
    return chart.descendants().filter(e -> "series".equals(e.attributes().get("class")))
        .map(e -> e.attr("data-series")).toList();
  }

  private static double coordinate(String value, double max) {
    double v = Double.parseDouble(value);
    assertThat(v).isFinite().isBetween(0.0, max);
    return v;
  }

  @Test
  void theSummaryStatesTheTtftModelAndTheReport() {
    assertThat(out).contains("TTFT model: 50 us per computed prompt token + 2 us per page loaded"
        + " from host").containsPattern("TTFT +mean \\d+\\.\\d\\d ms without cache, \\d+\\.\\d\\d"
        + " ms with cache").contains("collectives").contains("report    " + page);
  }

  @Test
  void thePageIsSelfContained() {
    // http:// appears only in the xmlns namespace names, which load nothing
    assertThat(html).startsWith("<!DOCTYPE html>").doesNotContain("<script", "<link", "<img")
        .doesNotContainPattern("(src|href)=").doesNotContain("url(")
        .contains("TTFT model: 50 us");
    assertThat(charts()).extracting(c -> c.attr("id"))
        .containsExactly("hit-rate", "tier-pressure", "ttft");
  }

  @Test
  void lineChartsHaveEverySeriesWithFiniteCoordinates() {
    for (String id : List.of("hit-rate", "tier-pressure")) {
      MiniXml.Element chart = chart(id);
      assertThat(chart.name()).isEqualTo("svg");
      assertThat(chart.attr("xmlns")).isEqualTo("http://www.w3.org/2000/svg");
      List<String> expected = id.equals("hit-rate") ? List.of("device", "host", "total")
          : List.of("device evictions", "host evictions", "host load-backs");
      assertThat(seriesNames(chart)).containsExactlyElementsOf(expected);
      double width = Double.parseDouble(chart.attr("width"));
      double height = Double.parseDouble(chart.attr("height"));
      chart.descendants().filter(e -> "series".equals(e.attributes().get("class")))
          .forEach(series -> {
            MiniXml.Element line = series.children().stream()
                .filter(e -> e.name().equals("polyline")).findFirst().orElseThrow();
            String[] points = line.attr("points").split(" ");
            assertThat(points).hasSizeGreaterThan(1);
            for (String point : points) {
              String[] xy = point.split(",");
              coordinate(xy[0], width);
              coordinate(xy[1], height);
            }
            List<MiniXml.Element> marks = series.children().stream()
                .filter(e -> e.name().equals("circle")).toList();
            assertThat(marks).hasSize(points.length);
          });
    }
  }

  @Test
  void theHitRateOfLaterWindowsIsNotZero() {
    MiniXml.Element total = chart("hit-rate").descendants()
        .filter(e -> "total".equals(e.attributes().get("data-series"))).findFirst().orElseThrow();
    String[] points = total.children().getFirst().attr("points").split(" ");
    double baseline = Double.parseDouble(points[0].split(",")[1]);
    double last = Double.parseDouble(points[points.length - 1].split(",")[1]);
    // SVG y grows downwards: a later window of multi-turn chats reuses its earlier turns.
    assertThat(last).isLessThan(baseline + 1e-9);
  }

  @Test
  void theTtftChartHasBarsWithAndWithoutTheCache() {
    MiniXml.Element chart = chart("ttft");
    assertThat(seriesNames(chart)).containsExactly("without cache", "with cache");
    double height = Double.parseDouble(chart.attr("height"));
    List<List<Double>> heights = new ArrayList<>();
    chart.descendants().filter(e -> "series".equals(e.attributes().get("class")))
        .forEach(series -> heights.add(series.children().stream()
            .filter(e -> e.name().equals("rect")).map(r -> {
              coordinate(r.attr("x"), Double.parseDouble(chart.attr("width")));
              coordinate(r.attr("y"), height);
              return coordinate(r.attr("height"), height);
            }).toList()));
    assertThat(heights.get(0)).hasSameSizeAs(heights.get(1)).hasSizeGreaterThan(1);
    // the last pair is the whole run: the cache reuses tokens, so its bar is lower
    assertThat(heights.get(1).getLast()).isLessThan(heights.get(0).getLast());
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
    assumeTrue(Files.isExecutable(Path.of(CHROMIUM)),
        "skipped: " + CHROMIUM + " is not installed (apt-get install chromium)");
    Path profile = Files.createDirectories(dir.resolve("chromium-profile"));
    Path dom = dir.resolve("dom.html");
    Path log = dir.resolve("chromium.log");
    Process p = new ProcessBuilder(CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--user-data-dir=" + profile, "--dump-dom",
        page.toAbsolutePath().toUri().toString())
        .redirectOutput(dom.toFile()).redirectError(log.toFile()).start();
    if (!p.waitFor(90, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("chromium did not exit within 90 s; log:\n" + Files.readString(log));
    }
    String dumped = Files.readString(dom, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(Files.readString(log)).isZero();
    assertThat(dumped).contains("<svg", "id=\"hit-rate\"", "id=\"tier-pressure\"", "id=\"ttft\"",
        "<polyline", "<rect");
  }

  @Test
  void prefixesGrowToTheWholeWorkload() {
    assertThat(SimulationReport.prefixes(24, 8)).containsExactly(3, 6, 9, 12, 15, 18, 21, 24);
    assertThat(SimulationReport.prefixes(3, 8)).containsExactly(1, 2, 3);
    assertThatThrownBy(() -> SimulationReport.prefixes(3, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("segments=0");
  }
}
