package io.kvtier.simulator.replay;

import io.kvtier.simulator.replay.ReplayResult.Tier;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;

/**
 * A replay's results as a text table, CSV and JSON. Rates are fractions in [0, 1] in the files
 * and percentages in the table; capacities are tokens.
 */
public final class ReplayFormat {

  /** What a reader of any of the outputs must know: the replay does not model time. */
  public static final String ORDER_NOTE =
      "requests replayed one at a time in arrival order; arrival times matter only as order";

  private static final Tier[] TIERS = Tier.values();

  private ReplayFormat() {}

  /**
   * A token count in short form: {@code 3M}, {@code 512K}, {@code 1.5M}, or the exact number.
   *
   * @param tokens the count
   * @return the text
   */
  public static String tokens(long tokens) {
    for (long unit : new long[] {1_000_000_000L, 1_000_000L, 1_000L}) {
      if (tokens >= unit && (tokens * 10) % unit == 0) {
        String suffix = unit == 1_000L ? "K" : unit == 1_000_000L ? "M" : "G";
        return tokens % unit == 0
            ? tokens / unit + suffix
            : String.format(Locale.ROOT, "%.1f%s", tokens / (double) unit, suffix);
      }
    }
    return Long.toString(tokens);
  }

  /**
   * A table for a terminal: one row per configuration, then the baselines.
   *
   * @param summary the replay
   * @return the lines, each ending in a newline
   */
  public static String table(ReplaySummary summary) {
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "replay of %s: %,d requests, %,d prompt tokens; %s%n",
            summary.workload(),
            summary.requests(),
            summary.promptTokens(),
            ORDER_NOTE));
    String header =
        "%-9s %5s %8s %8s %8s %-8s %-23s %4s %7s %7s %7s %7s %7s %7s %7s %9s %10s %10s %9s %14s%n";
    s.append(
        String.format(
            Locale.ROOT,
            header,
            "kind",
            "page",
            "device",
            "host",
            "l3",
            "eviction",
            "write",
            "snap",
            "hit%",
            "device%",
            "host%",
            "l3%",
            "req%",
            "usable%",
            "use/hit",
            "loads",
            "dev-evict",
            "host-evict",
            "backups",
            "saved-tokens"));
    for (ReplayResult r : summary.results()) {
      ReplayConfiguration c = r.configuration();
      boolean baseline = r.kind() != ReplayResult.Kind.SWEEP;
      s.append(
          String.format(
              Locale.ROOT,
              "%-9s %5d %8s %8s %8s %-8s %-23s %4s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %9d"
                  + " %10d %10d %9d %14d%n",
              r.kind().label(),
              c.pageSize(),
              r.kind() == ReplayResult.Kind.UNBOUNDED ? "all" : tokens(c.deviceTokens()),
              tokens(c.hostTokens()),
              tokens(c.l3Tokens()),
              baseline ? "-" : c.eviction().configName(),
              baseline ? "-" : c.writePolicy().configName(),
              c.snapshots() ? Integer.toString(c.snapshotIntervalPages()) : "-",
              100 * r.hitRate(Tier.TOTAL),
              100 * r.hitRate(Tier.DEVICE),
              100 * r.hitRate(Tier.HOST),
              100 * r.hitRate(Tier.L3),
              100 * r.requestHitRate(Tier.TOTAL),
              100 * r.usableHitRate(Tier.TOTAL),
              100 * r.usableOfMatched(),
              r.loadBacks(),
              r.deviceEvictionPages(),
              r.hostEvictionPages(),
              r.backups(),
              r.prefillTokensSaved()));
    }
    s.append(
        "hit% by prompt tokens (device%, host%, l3%: the tier that supplied them); req%: requests"
            + " with any hit; usable%: hit tokens requests resumed from, use/hit: usable% of hit%"
            + " (below 100 only with recurrent layers or SWA windows: a match is usable up to its deepest"
            + " snapshot, taken every snap pages); saved-tokens: the usable ones; loads, backups:"
            + " copies; evictions in pages\n");
    return s.toString();
  }

  /** A CSV column: its header and its value in a result's row. */
  private record Column(String name, Function<ReplayResult, Object> value) {
    /** A counter's column, headed by its key. */
    static Column of(ReplayCounter counter) {
      return new Column(counter.key(), r -> r.get(counter));
    }
  }

  /**
   * The CSV table, in order; the columns of the layer mix (the snapshot interval, 0 without
   * snapshots, and the usable hits) come last, so that the earlier columns keep their places.
   */
  private static final List<Column> CSV =
      List.of(
          new Column("kind", r -> r.kind().label()),
          new Column("pageSize", r -> r.configuration().pageSize()),
          new Column("deviceTokens", r -> r.configuration().deviceTokens()),
          new Column("hostTokens", r -> r.configuration().hostTokens()),
          new Column("l3Tokens", r -> r.configuration().l3Tokens()),
          new Column("eviction", r -> r.configuration().eviction().configName()),
          new Column("writePolicy", r -> r.configuration().writePolicy().configName()),
          Column.of(ReplayCounter.REQUESTS),
          Column.of(ReplayCounter.PROMPT_TOKENS),
          new Column("hitRate", r -> rate(r.hitRate(Tier.TOTAL))),
          new Column("deviceHitRate", r -> rate(r.hitRate(Tier.DEVICE))),
          new Column("hostHitRate", r -> rate(r.hitRate(Tier.HOST))),
          new Column("l3HitRate", r -> rate(r.hitRate(Tier.L3))),
          new Column("requestHitRate", r -> rate(r.requestHitRate(Tier.TOTAL))),
          new Column("deviceRequestHitRate", r -> rate(r.requestHitRate(Tier.DEVICE))),
          new Column("hostRequestHitRate", r -> rate(r.requestHitRate(Tier.HOST))),
          new Column("l3RequestHitRate", r -> rate(r.requestHitRate(Tier.L3))),
          Column.of(ReplayCounter.DEVICE_HIT_TOKENS),
          Column.of(ReplayCounter.HOST_HIT_TOKENS),
          Column.of(ReplayCounter.L3_HIT_TOKENS),
          new Column("prefillTokensSaved", ReplayResult::prefillTokensSaved),
          Column.of(ReplayCounter.LOAD_BACKS),
          Column.of(ReplayCounter.DEVICE_EVICTION_PAGES),
          Column.of(ReplayCounter.HOST_EVICTION_PAGES),
          Column.of(ReplayCounter.BACKUPS),
          Column.of(ReplayCounter.L3_PAGES_WRITTEN),
          Column.of(ReplayCounter.REJECTED_REQUESTS),
          new Column("seconds", r -> seconds(r.nanos())),
          new Column("cpuSeconds", r -> seconds(r.cpuNanos())),
          new Column(
              "snapshotIntervalPages",
              r -> r.configuration().snapshots() ? r.configuration().snapshotIntervalPages() : 0),
          new Column("usableHitRate", r -> rate(r.usableHitRate(Tier.TOTAL))),
          new Column("usableOfMatched", r -> rate(r.usableOfMatched())),
          Column.of(ReplayCounter.USABLE_DEVICE_HIT_TOKENS),
          Column.of(ReplayCounter.USABLE_HOST_HIT_TOKENS),
          Column.of(ReplayCounter.USABLE_L3_HIT_TOKENS));

  /** The CSV columns, in order. */
  public static final List<String> CSV_COLUMNS = CSV.stream().map(Column::name).toList();

  /**
   * The counters each JSON entry writes after its rates, in this order, keyed by name.
   */
  private static final Set<ReplayCounter> JSON_COUNTERS =
      EnumSet.range(ReplayCounter.LOAD_BACKS, ReplayCounter.REJECTED_REQUESTS);

  /**
   * CSV: a header of {@link #CSV_COLUMNS}, then one row per result (no field needs quoting).
   *
   * @param summary the replay
   * @return the lines, each ending in a newline
   */
  public static String csv(ReplaySummary summary) {
    StringBuilder s = new StringBuilder(String.join(",", CSV_COLUMNS)).append('\n');
    for (ReplayResult r : summary.results()) {
      for (int i = 0; i < CSV.size(); i++) {
        s.append(i == 0 ? "" : ",").append(CSV.get(i).value().apply(r));
      }
      s.append('\n');
    }
    return s.toString();
  }

  /**
   * JSON: the trace, then {@code configurations} (one entry per configuration of the sweep) and
   * {@code baselines}, each entry with {@code hitRate} and {@code requestHitRate} objects keyed
   * {@code device}, {@code host}, {@code l3}, {@code total}.
   *
   * @param summary the replay
   * @return the document, with a final newline
   */
  public static String json(ReplaySummary summary) {
    StringBuilder s = new StringBuilder();
    s.append("{\"workload\":").append(string(summary.workload()));
    s.append(",\"requests\":").append(summary.requests());
    s.append(",\"promptTokens\":").append(summary.promptTokens());
    s.append(",\"threads\":").append(summary.threads());
    s.append(",\"wallSeconds\":").append(seconds(summary.wallNanos()));
    s.append(",\"note\":").append(string(ORDER_NOTE));
    s.append(",\"configurations\":");
    entries(s, summary.sweep());
    s.append(",\"baselines\":");
    entries(s, summary.baselines());
    return s.append("}\n").toString();
  }

  private static void entries(StringBuilder s, List<ReplayResult> results) {
    s.append('[');
    for (int i = 0; i < results.size(); i++) {
      ReplayResult r = results.get(i);
      ReplayConfiguration c = r.configuration();
      s.append(i == 0 ? "{" : ",{");
      s.append("\"kind\":").append(string(r.kind().label()));
      s.append(",\"pageSize\":").append(c.pageSize());
      s.append(",\"deviceTokens\":").append(c.deviceTokens());
      s.append(",\"hostTokens\":").append(c.hostTokens());
      s.append(",\"l3Tokens\":").append(c.l3Tokens());
      s.append(",\"eviction\":").append(string(c.eviction().configName()));
      s.append(",\"writePolicy\":").append(string(c.writePolicy().configName()));
      s.append(",\"snapshotIntervalPages\":").append(c.snapshots() ? c.snapshotIntervalPages() : 0);
      s.append(",\"snapshotSlots\":").append(c.snapshotSlots());
      s.append(",\"hitRate\":{");
      for (int t = 0; t < TIERS.length; t++) {
        s.append(t == 0 ? "" : ",").append(string(TIERS[t].key())).append(':');
        s.append(rate(r.hitRate(TIERS[t])));
      }
      s.append("},\"requestHitRate\":{");
      for (int t = 0; t < TIERS.length; t++) {
        s.append(t == 0 ? "" : ",").append(string(TIERS[t].key())).append(':');
        s.append(rate(r.requestHitRate(TIERS[t])));
      }
      s.append("},\"hitTokens\":{");
      for (int t = 0; t < TIERS.length; t++) {
        s.append(t == 0 ? "" : ",").append(string(TIERS[t].key())).append(':');
        s.append(r.hitTokens(TIERS[t]));
      }
      s.append("},\"usableHitRate\":{");
      for (int t = 0; t < TIERS.length; t++) {
        s.append(t == 0 ? "" : ",").append(string(TIERS[t].key())).append(':');
        s.append(rate(r.usableHitRate(TIERS[t])));
      }
      s.append("},\"usableHitTokens\":{");
      for (int t = 0; t < TIERS.length; t++) {
        s.append(t == 0 ? "" : ",").append(string(TIERS[t].key())).append(':');
        s.append(r.usableHitTokens(TIERS[t]));
      }
      s.append("},\"usableOfMatched\":").append(rate(r.usableOfMatched()));
      s.append(",\"prefillTokensSaved\":").append(r.prefillTokensSaved());
      for (ReplayCounter counter : JSON_COUNTERS) {
        s.append(',').append(string(counter.key())).append(':').append(r.get(counter));
      }
      s.append(",\"seconds\":").append(seconds(r.nanos()));
      s.append(",\"cpuSeconds\":").append(seconds(r.cpuNanos()));
      s.append('}');
    }
    s.append(']');
  }

  private static String rate(double v) {
    return String.format(Locale.ROOT, "%.6f", v);
  }

  private static String seconds(long nanos) {
    return String.format(Locale.ROOT, "%.3f", nanos / 1e9);
  }

  /** A JSON string; specs are file paths and generator parameters, so escape what JSON needs. */
  private static String string(String text) {
    StringBuilder s = new StringBuilder("\"");
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        s.append('\\').append(c);
      } else if (c < 0x20) {
        s.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        s.append(c);
      }
    }
    return s.append('"').toString();
  }
}
