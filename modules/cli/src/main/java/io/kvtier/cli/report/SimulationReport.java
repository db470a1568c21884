package io.kvtier.cli.report;

import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationResult;
import io.kvtier.simulator.SimulationTimeline;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The self-contained HTML report of {@code kvtier simulate --report}: inline CSS and SVG, no
 * script, no external resource, and XHTML-compatible markup (every element closed, every
 * attribute quoted, every text escaped).
 *
 * <p>Everything comes from the one run's {@link SimulationTimeline}: the cumulative hit rate of
 * each tier and the occupancy of the device and host tiers at each sample, and the distribution
 * of the per-request TTFT of the {@link TtftModel} with and without the cache.
 */
public final class SimulationReport {
  /** The most bars per series in the TTFT histogram. */
  static final int TTFT_BINS = 12;

  private SimulationReport() {}

  /**
   * Renders the report.
   *
   * @param config the run's config
   * @param summary the text summary printed by the command
   * @param result the run
   * @param model the TTFT model
   * @return the HTML page
   */
  public static String html(
      SimulationConfig config, String summary, SimulationResult result, TtftModel model) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(summary, "summary");
    Objects.requireNonNull(result, "result");
    Objects.requireNonNull(model, "model");
    SimulationTimeline timeline = result.timeline();
    TtftModel.Estimate ttft = model.estimate(result, config.pageSize());

    StringBuilder h = new StringBuilder();
    h.append("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n")
        .append("<head>\n<meta charset=\"utf-8\"/>\n<title>kvtier simulate report</title>\n")
        .append("<style>\nbody{font-family:sans-serif;margin:2em;max-width:60em;color:#222}\n")
        // The summary wraps rather than scroll sideways; the workload spec breaks only at the
        // commas (<wbr/>), never inside a word.
        .append("pre{background:#f6f6f6;padding:1em;white-space:pre-wrap;overflow-wrap:anywhere}\n")
        .append("code{white-space:normal;overflow-wrap:normal;word-break:normal}\n")
        .append("h2{font-size:1.1em;margin-top:1.5em}\n")
        .append("figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#555}\n")
        .append("table{border-collapse:collapse}td,th{padding:0.2em 0.8em;text-align:right}\n")
        .append("svg{background:#fff;border:1px solid #ddd}\n</style>\n</head>\n<body>\n")
        .append("<h1>kvtier simulate</h1>\n");
    h.append(
        String.format(
            Locale.ROOT,
            "<p>%d ranks, %s device, seed %d, page size %d, %d device pages per rank, %d host"
                + " pages per rank%s.</p>\n",
            config.ranks(),
            Svg.escape(config.device()),
            config.seed(),
            config.pageSize(),
            config.devicePages(),
            config.hostPages(),
            config.l3().enabled()
                ? ", an L3 store (" + Svg.escape(config.l3().store()) + ") per rank"
                : ""));
    h.append("<p id=\"workload\">Workload <code>")
        .append(breakAtCommas(result.workload()))
        .append("</code></p>\n");
    for (String line : WorkloadNotes.lines(result.workload())) {
      h.append("<p class=\"workload-note\">").append(Svg.escape(line)).append("</p>\n");
    }
    h.append("<pre id=\"summary\">")
        .append(Svg.escape(withoutModelLine(summary)))
        .append("</pre>\n");
    h.append(
        String.format(
            Locale.ROOT,
            "<p>The charts come from this one run: rank 0 sampled its tiers and counters every %s"
                + " (%d samples; every rank holds the same replicated state), and recorded the"
                + " arrival, admission and first-token ticks of %s (%d).</p>\n",
            timeline.sampleStride() == 1 ? "tick" : timeline.sampleStride() + " ticks",
            timeline.samples().size(),
            timeline.requestStride() == 1
                ? "every request"
                : "one request in " + timeline.requestStride() + " by arrival",
            timeline.requests().size()));
    h.append("<p>TTFT model: ")
        .append(Svg.escape(model.describe()))
        .append(
            ". The simulator counts tokens and ticks, not time: these are estimates, not"
                + " measurements. The run without a cache was not simulated; its queue would be no"
                + " shorter, so charging it this run's queueing makes its TTFT a lower bound.</p>\n");
    percentiles(h, ttft);
    figure(
        h,
        "Hit rate",
        hitRateChart(timeline),
        "Prompt tokens admitted so far that were found on the"
            + " device, loaded back from the host, or fetched from L3 (none without an L3 store),"
            + " as a share of all prompt tokens admitted so far.");
    figure(
        h,
        "Tier occupancy",
        occupancyChart(config, timeline),
        String.format(
            Locale.ROOT,
            "Pages of each tier in use (capacity %d device and %d host pages per rank): in use ="
                + " evictable (cached, reclaimable) + protected (held by running requests and"
                + " copies in flight).",
            config.devicePages(),
            config.hostPages()));
    if (config.l3().enabled()) {
      figure(
          h,
          "The L3 tier",
          l3Chart(timeline),
          "Prompt tokens that admissions loaded from the host so far: those a prefetch had"
              + " fetched from the L3 store for the request (from L3), and those that were on the"
              + " host already (host hits).");
    }
    figure(
        h,
        "Time to first token",
        ttftChart(ttft),
        "How many requests had each estimated time to first token, with and without the cache"
            + " (the TTFT model above).");
    h.append("</body>\n</html>\n");
    return h.toString();
  }

  private static String hitRateChart(SimulationTimeline t) {
    List<SimulationTimeline.Sample> samples = t.samples();
    double[] device = new double[samples.size()];
    double[] host = new double[samples.size()];
    double[] l3 = new double[samples.size()];
    double[] total = new double[samples.size()];
    for (int k = 0; k < samples.size(); k++) {
      SimulationTimeline.Sample s = samples.get(k);
      device[k] = rate(s.hitTokens().device(), s.promptTokens());
      host[k] = rate(s.hitTokens().host(), s.promptTokens());
      l3[k] = rate(s.hitTokens().l3(), s.promptTokens());
      total[k] = rate(s.hitTokens().total(), s.promptTokens());
    }
    return Svg.lines(
        "hit-rate",
        "Hit rate per tier over time",
        "tick (1 ms of virtual time)",
        "hit rate so far (%)",
        ticks(t),
        100,
        List.of(
            new Svg.Series("device", "#1f77b4", device),
            new Svg.Series("host", "#ff7f0e", host),
            new Svg.Series("l3", "#8c564b", l3),
            new Svg.Series("total", "#2ca02c", total)));
  }

  private static String l3Chart(SimulationTimeline t) {
    List<SimulationTimeline.Sample> samples = t.samples();
    double[] l3 = new double[samples.size()];
    double[] host = new double[samples.size()];
    for (int k = 0; k < samples.size(); k++) {
      l3[k] = samples.get(k).hitTokens().l3();
      host[k] = samples.get(k).hitTokens().host();
    }
    return Svg.lines(
        "l3",
        "Tokens loaded from L3 and from the host, so far",
        "tick (1 ms of virtual time)",
        "prompt tokens",
        ticks(t),
        0,
        List.of(
            new Svg.Series("from L3", "#8c564b", l3),
            new Svg.Series("host hits", "#ff7f0e", host)));
  }

  /** The workload spec as XHTML text that may break after each comma and nowhere else. */
  static String breakAtCommas(String spec) {
    return Svg.escape(spec).replace(",", ",<wbr/>");
  }

  /**
   * The summary without its TTFT model line: the page states the model once, above the charts.
   */
  static String withoutModelLine(String summary) {
    StringBuilder s = new StringBuilder();
    summary
        .lines()
        .filter(l -> !l.startsWith("TTFT model: "))
        .forEach(l -> s.append(l).append('\n'));
    return s.toString();
  }

  private static String occupancyChart(SimulationConfig config, SimulationTimeline t) {
    List<SimulationTimeline.Sample> samples = t.samples();
    double[] deviceUsed = new double[samples.size()];
    double[] deviceEvictable = new double[samples.size()];
    double[] hostUsed = new double[samples.size()];
    double[] hostEvictable = new double[samples.size()];
    for (int k = 0; k < samples.size(); k++) {
      SimulationTimeline.Sample s = samples.get(k);
      deviceUsed[k] = s.device().used();
      deviceEvictable[k] = s.device().evictable();
      hostUsed[k] = s.host().used();
      hostEvictable[k] = s.host().evictable();
    }
    List<Svg.Series> series =
        new ArrayList<>(
            List.of(
                new Svg.Series("device in use", "#1f77b4", deviceUsed),
                new Svg.Series("device evictable", "#aec7e8", deviceEvictable)));
    if (config.hostPages() > 0) {
      series.add(new Svg.Series("host in use", "#ff7f0e", hostUsed));
      series.add(new Svg.Series("host evictable", "#ffbb78", hostEvictable));
    }
    // Both tiers on one axis that ends at the larger capacity: a full tier touches the top.
    return Svg.lines(
        "tier-occupancy",
        "Tier occupancy over time",
        "tick (1 ms of virtual time)",
        "pages per rank",
        ticks(t),
        occupancyTop(config),
        series);
  }

  /** The top of the occupancy chart's axis: the larger tier's capacity. */
  static double occupancyTop(SimulationConfig config) {
    return Math.max(config.devicePages(), config.hostPages());
  }

  private static String ttftChart(TtftModel.Estimate ttft) {
    Histogram bins = Histogram.of(ms(ttft.withoutCacheUs()), ms(ttft.withCacheUs()), TTFT_BINS);
    return Svg.bars(
        "ttft",
        "TTFT distribution with and without the cache",
        "estimated TTFT (ms)",
        "requests",
        bins.labels(),
        List.of(
            new Svg.Series("without cache", "#d62728", Histogram.values(bins.first())),
            new Svg.Series("with cache", "#2ca02c", Histogram.values(bins.second()))));
  }

  private static void percentiles(StringBuilder h, TtftModel.Estimate e) {
    h.append(
        String.format(
            Locale.ROOT,
            "<table id=\"ttft-percentiles\"><caption>Estimated TTFT"
                + " (ms) of %d requests</caption>\n<tr><th></th><th>mean</th><th>p50</th><th>p90</th>"
                + "<th>p99</th></tr>\n",
            e.requests()));
    h.append(
        String.format(
            Locale.ROOT,
            "<tr><th>without cache</th><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td></tr>\n",
            e.meanWithoutCacheUs() / 1000,
            e.withoutCachePercentileUs(50) / 1000,
            e.withoutCachePercentileUs(90) / 1000,
            e.withoutCachePercentileUs(99) / 1000));
    h.append(
        String.format(
            Locale.ROOT,
            "<tr><th>with cache</th><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td></tr>\n",
            e.meanWithCacheUs() / 1000,
            e.withCachePercentileUs(50) / 1000,
            e.withCachePercentileUs(90) / 1000,
            e.withCachePercentileUs(99) / 1000));
    h.append("</table>\n");
  }

  private static double[] ticks(SimulationTimeline t) {
    return t.samples().stream().mapToDouble(SimulationTimeline.Sample::tick).toArray();
  }

  private static double[] ms(double[] us) {
    double[] ms = new double[us.length];
    for (int i = 0; i < us.length; i++) {
      ms[i] = us[i] / 1000;
    }
    return ms;
  }

  private static void figure(StringBuilder h, String heading, String svg, String caption) {
    h.append("<h2>")
        .append(Svg.escape(heading))
        .append("</h2>\n<figure>\n")
        .append(svg)
        .append("\n<figcaption>")
        .append(Svg.escape(caption))
        .append("</figcaption>\n</figure>\n");
  }

  private static double rate(long hits, long prompt) {
    return prompt <= 0 ? 0 : Math.max(0, Math.min(100, 100.0 * hits / prompt));
  }
}
