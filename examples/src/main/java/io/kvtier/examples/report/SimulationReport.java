package io.kvtier.examples.report;

import io.kvtier.testkit.sim.SimulationConfig;
import io.kvtier.testkit.sim.SimulationResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The self-contained HTML report of {@code kvtier simulate --report}: inline CSS and SVG, no
 * script, no external resource, and XHTML-compatible markup (every element closed, every
 * attribute quoted, every text escaped).
 *
 * <p>The simulator reports totals per run, not time series, so the report runs the same config
 * on growing prefixes of the workload (the first n requests, in arrival order): the difference
 * between two consecutive runs is what the requests of that window added. The charts show, per
 * window, the hit rate of each tier, the pages evicted from each tier (the simulator does not
 * expose tier occupancy; evictions start once a tier is full) and the mean TTFT of the {@link
 * TtftModel} with and without the cache.
 */
public final class SimulationReport {
  private SimulationReport() {}

  /**
   * One run of the series: the config limited to its first requests.
   *
   * @param result the run's result; {@code result.requests()} is its x value
   */
  public record Segment(SimulationResult result) {
    /** Validates the result. */
    public Segment {
      Objects.requireNonNull(result, "result");
    }
  }

  /**
   * The request counts of the runs of a report: {@code segments} growing prefixes of a
   * workload of {@code total} requests, the last one all of them.
   *
   * @param total the requests of the full run
   * @param segments the number of runs wanted, at least 1
   * @return ascending distinct counts, each at least 1, the last {@code total}
   */
  public static long[] prefixes(long total, int segments) {
    if (segments < 1) {
      throw new IllegalArgumentException("segments=" + segments + " must be >= 1");
    }
    List<Long> counts = new ArrayList<>();
    for (int k = 1; k <= segments; k++) {
      long n = Math.round((double) total * k / segments);
      if (n >= 1 && (counts.isEmpty() || counts.getLast() < n)) {
        counts.add(n);
      }
    }
    return counts.stream().mapToLong(Long::longValue).toArray();
  }

  /**
   * Renders the report.
   *
   * @param config the full run's config
   * @param summary the text summary printed by the command
   * @param segments the runs on growing prefixes, ascending, the last the full run
   * @param model the TTFT model
   * @return the HTML page
   */
  public static String html(SimulationConfig config, String summary, List<Segment> segments,
      TtftModel model) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(summary, "summary");
    Objects.requireNonNull(model, "model");
    if (segments.isEmpty()) {
      throw new IllegalArgumentException("a report needs at least one run");
    }
    int n = segments.size();
    double[] x = new double[n];
    double[] deviceRate = new double[n];
    double[] hostRate = new double[n];
    double[] totalRate = new double[n];
    double[] deviceEvictions = new double[n];
    double[] hostEvictions = new double[n];
    double[] loads = new double[n];
    double[] ttftWithout = new double[n + 1];
    double[] ttftWith = new double[n + 1];
    List<String> windows = new ArrayList<>();
    SimulationResult previous = null;
    for (int k = 0; k < n; k++) {
      SimulationResult r = segments.get(k).result();
      x[k] = r.requests();
      long prompt = r.promptTokens() - (previous == null ? 0 : previous.promptTokens());
      long device = r.hitTokens().device() - (previous == null ? 0 : previous.hitTokens().device());
      long host = r.hitTokens().host() - (previous == null ? 0 : previous.hitTokens().host());
      long admitted = (r.requests() - r.rejected())
          - (previous == null ? 0 : previous.requests() - previous.rejected());
      deviceRate[k] = rate(device, prompt);
      hostRate[k] = rate(host, prompt);
      totalRate[k] = rate(device + host, prompt);
      deviceEvictions[k] = r.cache().deviceEvictions()
          - (previous == null ? 0 : previous.cache().deviceEvictions());
      hostEvictions[k] = r.cache().hostEvictions()
          - (previous == null ? 0 : previous.cache().hostEvictions());
      loads[k] = r.cache().loadsCommitted()
          - (previous == null ? 0 : previous.cache().loadsCommitted());
      for (double[] a : new double[][] {deviceEvictions, hostEvictions, loads}) {
        a[k] = Math.max(0, a[k]);
      }
      if (admitted > 0 && prompt > 0) {
        long reused = Math.max(0, Math.min(prompt, device + host));
        long pages = (Math.max(0, host) + config.pageSize() - 1) / config.pageSize();
        ttftWithout[k] = model.usPerComputedToken() * prompt / admitted / 1000;
        ttftWith[k] = (model.usPerComputedToken() * (prompt - reused)
            + model.usPerLoadedPage() * pages) / admitted / 1000;
      }
      long from = previous == null ? 1 : previous.requests() + 1;
      windows.add(from + "-" + r.requests());
      previous = r;
    }
    TtftModel.Estimate all = model.estimate(segments.getLast().result(), config.pageSize());
    ttftWithout[n] = all.withoutCacheUs() / 1000;
    ttftWith[n] = all.withCacheUs() / 1000;
    windows.add("all");

    String xLabel = "requests arrived (each point: the window since the previous one)";
    String hitChart = Svg.lines("hit-rate", "Hit rate per tier over time", xLabel,
        "hit rate of the window (%)", x, 100, List.of(
            new Svg.Series("device", "#1f77b4", deviceRate),
            new Svg.Series("host", "#ff7f0e", hostRate),
            new Svg.Series("total", "#2ca02c", totalRate)));
    String tierChart = Svg.lines("tier-pressure", "Tier pressure over time: pages evicted",
        xLabel, "pages in the window", x, 0, List.of(
            new Svg.Series("device evictions", "#1f77b4", deviceEvictions),
            new Svg.Series("host evictions", "#ff7f0e", hostEvictions),
            new Svg.Series("host load-backs", "#9467bd", loads)));
    String ttftChart = Svg.bars("ttft", "Mean TTFT with and without the cache",
        "requests of the window", "mean TTFT (ms)", windows, List.of(
            new Svg.Series("without cache", "#d62728", ttftWithout),
            new Svg.Series("with cache", "#2ca02c", ttftWith)));

    StringBuilder h = new StringBuilder();
    h.append("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n")
        .append("<head>\n<meta charset=\"utf-8\"/>\n<title>kvtier simulate report</title>\n")
        .append("<style>\nbody{font-family:sans-serif;margin:2em;max-width:60em;color:#222}\n")
        .append("pre{background:#f6f6f6;padding:1em;overflow-x:auto}code{word-break:break-all}\n")
        .append("figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#555}\n")
        .append("svg{background:#fff;border:1px solid #ddd}\n</style>\n</head>\n<body>\n")
        .append("<h1>kvtier simulate</h1>\n");
    h.append(String.format(Locale.ROOT,
        "<p>%d ranks, %s device, workload <code>%s</code>, seed %d, page size %d, %d device"
            + " pages per rank, %d host pages per rank.</p>\n",
        config.ranks(), Svg.escape(config.device()),
        Svg.escape(segments.getLast().result().workload()), config.seed(), config.pageSize(),
        config.devicePages(), config.hostPages()));
    h.append("<pre>").append(Svg.escape(summary)).append("</pre>\n");
    h.append("<p>TTFT model: ").append(Svg.escape(model.describe()))
        .append(". The simulator counts tokens, not time: these are estimates of prefill cost,"
            + " not measurements.</p>\n");
    h.append(String.format(Locale.ROOT,
        "<p>The simulator reports totals per run, so this report ran the same config %d times on"
            + " growing prefixes of the workload (the first n requests in arrival order); each"
            + " point is what the requests of one window added.</p>\n", n));
    figure(h, hitChart, "Prompt tokens of the window found on the device and loaded back from"
        + " the host, as a share of the window's prompt tokens.");
    figure(h, tierChart, "The simulator does not expose tier occupancy, so this chart shows the"
        + " pressure on each tier instead: pages evicted from the device and the host, and"
        + " pages loaded back from the host, per window. Evictions start once a tier is full.");
    figure(h, ttftChart, "Mean estimated time to first token of the requests of each window,"
        + " and of the whole run, with and without the cache (" + model.describe() + ").");
    h.append("</body>\n</html>\n");
    return h.toString();
  }

  private static void figure(StringBuilder h, String svg, String caption) {
    h.append("<figure>\n").append(svg).append("\n<figcaption>").append(Svg.escape(caption))
        .append("</figcaption>\n</figure>\n");
  }

  private static double rate(long hits, long prompt) {
    return prompt <= 0 ? 0 : Math.max(0, Math.min(100, 100.0 * hits / prompt));
  }
}
