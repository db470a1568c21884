package io.kvtier.cli.report;

import io.kvtier.simulator.replay.ReplayConfiguration;
import io.kvtier.simulator.replay.ReplayFormat;
import io.kvtier.simulator.replay.ReplayResult;
import io.kvtier.simulator.replay.ReplayResult.Tier;
import io.kvtier.simulator.replay.ReplaySummary;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The self-contained HTML report of {@code kvtier replay --report}: inline CSS and SVG, no script,
 * no external resource, XHTML-compatible markup. One chart per group of configurations that
 * differ only in device capacity and eviction policy (same page size, host, L3 and write
 * policy): the total hit rate over the device capacity, one line per eviction policy, and the
 * unbounded baseline of the page size as the ceiling. A table of every result follows.
 */
public final class ReplayReport {
  private static final String[] COLORS = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"
  };

  private ReplayReport() {}

  /**
   * Renders the report.
   *
   * @param summary the replay
   * @param hostAsRatio whether the sweep gave the host capacity as a ratio of the device's (the
   *     charts then group by ratio, else by host tokens)
   * @param command the command line, shown on the page
   * @return the HTML page
   */
  public static String html(ReplaySummary summary, boolean hostAsRatio, String command) {
    Objects.requireNonNull(summary, "summary");
    Objects.requireNonNull(command, "command");
    StringBuilder h = new StringBuilder();
    h.append("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n")
        .append("<head>\n<meta charset=\"utf-8\"/>\n<title>kvtier replay report</title>\n")
        .append("<style>\nbody{font-family:sans-serif;margin:2em;max-width:70em;color:#222}\n")
        .append(
            "pre{background:#f6f6f6;padding:1em;white-space:pre-wrap}code{word-break:break-all}\n")
        .append("figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#555}\n")
        .append("table{border-collapse:collapse;font-size:0.85em}")
        .append("td,th{padding:0.2em 0.6em;text-align:right;border-bottom:1px solid #eee}\n")
        .append("svg{background:#fff;border:1px solid #ddd}\n</style>\n</head>\n<body>\n")
        .append("<h1>kvtier replay</h1>\n");
    h.append(
        String.format(
            Locale.ROOT,
            "<p>Workload <code>%s</code>: %,d requests, %,d prompt tokens, %d configurations on"
                + " %d threads. The engine's own cache on one rank, without KV bytes; %s.</p>\n",
            Svg.escape(summary.workload()),
            summary.requests(),
            summary.promptTokens(),
            summary.sweep().size(),
            summary.threads(),
            Svg.escape(ReplayFormat.ORDER_NOTE)));
    h.append("<pre>").append(Svg.escape(command)).append("</pre>\n");
    int chart = 0;
    for (Map.Entry<String, List<ReplayResult>> g : groups(summary, hostAsRatio).entrySet()) {
      List<ReplayResult> rows = g.getValue();
      int page = rows.get(0).configuration().pageSize();
      h.append("<figure>")
          .append(curves("curves-" + chart++, g.getKey(), rows, unbounded(summary, page)))
          .append("<figcaption>")
          .append(Svg.escape(g.getKey()))
          .append(
              ": prompt tokens served from any tier (device, host, L3) as a share of all prompt"
                  + " tokens, per device capacity; one line per eviction policy, and the"
                  + " unbounded cache (everything ever seen stays) as the ceiling.")
          .append("</figcaption></figure>\n");
    }
    table(h, summary);
    h.append("</body>\n</html>\n");
    return h.toString();
  }

  /** Configurations that differ only in device capacity and eviction, in first-seen order. */
  private static Map<String, List<ReplayResult>> groups(
      ReplaySummary summary, boolean hostAsRatio) {
    Map<String, List<ReplayResult>> groups = new LinkedHashMap<>();
    for (ReplayResult r : summary.sweep()) {
      ReplayConfiguration c = r.configuration();
      String host =
          c.hostTokens() == 0
              ? "no host tier"
              : hostAsRatio
                  ? "host "
                      + new java.math.BigDecimal(c.hostTokens() / (double) c.deviceTokens())
                          .round(new java.math.MathContext(3))
                          .stripTrailingZeros()
                          .toPlainString()
                      + " x device"
                  : "host " + ReplayFormat.tokens(c.hostTokens()) + " tokens";
      String key =
          "page "
              + c.pageSize()
              + ", "
              + host
              + (c.l3Tokens() == 0
                  ? ", no L3"
                  : ", L3 " + ReplayFormat.tokens(c.l3Tokens()) + " tokens")
              + ", "
              + c.writePolicy().configName()
              + (c.snapshots() ? ", snapshots every " + c.snapshotIntervalPages() + " pages" : "");
      groups.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
    }
    return groups;
  }

  private static double unbounded(ReplaySummary summary, int page) {
    for (ReplayResult r : summary.baselines()) {
      if (r.kind() == ReplayResult.Kind.UNBOUNDED && r.configuration().pageSize() == page) {
        return 100 * r.hitRate(Tier.TOTAL);
      }
    }
    return 0;
  }

  private static String curves(
      String id, String title, List<ReplayResult> rows, double unboundedPercent) {
    TreeSet<Long> capacities = new TreeSet<>();
    Map<String, Map<Long, Double>> byPolicy = new LinkedHashMap<>();
    for (ReplayResult r : rows) {
      ReplayConfiguration c = r.configuration();
      capacities.add(c.deviceTokens());
      byPolicy
          .computeIfAbsent(c.eviction().configName(), k -> new LinkedHashMap<>())
          .put(c.deviceTokens(), 100 * r.hitRate(Tier.TOTAL));
      if (c.snapshots()) {
        // With recurrent-state snapshots the usable part of the match beside it (HYBRID.md §8).
        byPolicy
            .computeIfAbsent(c.eviction().configName() + " usable", k -> new LinkedHashMap<>())
            .put(c.deviceTokens(), 100 * r.usableHitRate(Tier.TOTAL));
      }
    }
    double[] x = new double[capacities.size()];
    int k = 0;
    for (long cap : capacities) {
      x[k++] = cap / 1e6;
    }
    List<Svg.Series> series = new ArrayList<>();
    int i = 0;
    for (Map.Entry<String, Map<Long, Double>> p : byPolicy.entrySet()) {
      double[] y = new double[x.length];
      int j = 0;
      for (long cap : capacities) {
        y[j++] = p.getValue().getOrDefault(cap, 0.0);
      }
      series.add(new Svg.Series(p.getKey(), COLORS[i++ % COLORS.length], y));
    }
    double[] ceiling = new double[x.length];
    java.util.Arrays.fill(ceiling, unboundedPercent);
    series.add(new Svg.Series("unbounded", "#999999", ceiling));
    return Svg.lines(
        id,
        "Hit rate over device capacity, " + title,
        "device capacity (million tokens)",
        "hit rate (% of prompt tokens)",
        x,
        // Fitted to the data (the ceiling included): a 15% ceiling on a 100% axis is a flat line.
        0,
        series);
  }

  private static void table(StringBuilder h, ReplaySummary summary) {
    h.append("<h2>All results</h2>\n<table>\n<tr>");
    for (String c :
        List.of(
            "kind",
            "page",
            "device",
            "host",
            "L3",
            "eviction",
            "write",
            "snapshot interval",
            "hit %",
            "device %",
            "host %",
            "L3 %",
            "requests hit %",
            "usable hit %",
            "load-backs",
            "device evictions (pages)",
            "host evictions (pages)",
            "backups",
            "prefill tokens saved")) {
      h.append("<th>").append(Svg.escape(c)).append("</th>");
    }
    h.append("</tr>\n");
    for (ReplayResult r : summary.results()) {
      ReplayConfiguration c = r.configuration();
      boolean sweep = r.kind() == ReplayResult.Kind.SWEEP;
      Object[] cells = {
        r.kind().label(),
        c.pageSize(),
        r.kind() == ReplayResult.Kind.UNBOUNDED ? "all" : ReplayFormat.tokens(c.deviceTokens()),
        ReplayFormat.tokens(c.hostTokens()),
        ReplayFormat.tokens(c.l3Tokens()),
        sweep ? c.eviction().configName() : "-",
        sweep ? c.writePolicy().configName() : "-",
        c.snapshots() ? c.snapshotIntervalPages() : "-",
        percent(r.hitRate(Tier.TOTAL)),
        percent(r.hitRate(Tier.DEVICE)),
        percent(r.hitRate(Tier.HOST)),
        percent(r.hitRate(Tier.L3)),
        percent(r.requestHitRate(Tier.TOTAL)),
        percent(r.usableHitRate(Tier.TOTAL)),
        r.loadBacks(),
        r.deviceEvictionPages(),
        r.hostEvictionPages(),
        r.backups(),
        r.prefillTokensSaved()
      };
      h.append("<tr>");
      for (Object cell : cells) {
        h.append("<td>").append(Svg.escape(String.valueOf(cell))).append("</td>");
      }
      h.append("</tr>\n");
    }
    h.append("</table>\n");
  }

  private static String percent(double rate) {
    return String.format(Locale.ROOT, "%.2f", 100 * rate);
  }
}
