package io.kvtier.cli;

import io.kvtier.cli.report.Progress;
import io.kvtier.cli.report.ReplayReport;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.simulator.replay.Replay;
import io.kvtier.simulator.replay.ReplayConfiguration;
import io.kvtier.simulator.replay.ReplayFormat;
import io.kvtier.simulator.replay.ReplayProgress;
import io.kvtier.simulator.replay.ReplayResult;
import io.kvtier.simulator.replay.ReplaySummary;
import io.kvtier.simulator.replay.ReplaySweep;
import io.kvtier.simulator.replay.ReplayTrace;
import io.kvtier.simulator.workload.TraceFormatException;
import io.kvtier.simulator.workload.Workload;
import io.kvtier.simulator.workload.Workloads;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.config.ConfigValues;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier replay}: a what-if replay of one workload through the engine's own cache (one
 * rank, no collective, no KV bytes) over a sweep of capacities and policies ({@link Replay}),
 * with a table on standard output and optional CSV, JSON and HTML files.
 */
@Command(
    name = "replay",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Replays a trace or generator through kvtier's cache (the engine's RankCache: one rank, no"
          + " collective, no KV bytes) for every combination of the capacities and policies"
          + " given, and prints the hit rate each tier gives (device, host, L3; by prompt tokens"
          + " and by requests), load-backs, evictions, backups and the prefill tokens saved, with"
          + " the baselines 'unbounded' (nothing ever evicted) and 'no-cache'.",
      "Requests run one at a time in arrival order, each finished before the next: arrival times"
          + " matter only as order (a server that overlaps requests can hit less). Copies finish"
          + " at once: this measures what the cache holds, not how long copies take.",
      "Lists are comma-separated; token counts take K, M, G (1M = 1,000,000 tokens). Each"
          + " configuration runs on a core of its own. Exit status: 0 on success, 1 on a failed"
          + " replay, 2 on a usage error."
    })
final class ReplayCommand implements Callable<Integer> {
  private static final Pattern COUNT = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*([kKmMgG]?)");

  @Spec private CommandSpec spec;

  @Option(
      names = "--workload",
      required = true,
      paramLabel = "SPEC",
      description =
          "What to replay: mooncake:PATH (a block-hash trace), jsonl:PATH, fixed:shared-prefix,"
              + " fixed:multiturn, or a generator such as multiturn:conversations=128"
              + " (docs/WORKLOADS.md).")
  private String workload;

  @Option(
      names = "--requests",
      paramLabel = "N",
      description = "Replay only the first N requests (default: all).")
  private Integer requests;

  @Option(
      names = "--device-tokens",
      paramLabel = "LIST",
      description = "Device (L1) capacities in tokens, e.g. 1M,3M,10M.")
  private String deviceTokens;

  @Option(
      names = "--device-bytes",
      paramLabel = "LIST",
      description = "Device capacities in bytes, e.g. 40GiB,80GiB; needs --kv-layout.")
  private String deviceBytes;

  @Option(
      names = "--host-tokens",
      paramLabel = "LIST",
      description = "Host (L2) capacities in tokens; 0 is no host tier.")
  private String hostTokens;

  @Option(
      names = "--host-bytes",
      paramLabel = "LIST",
      description = "Host capacities in bytes; needs --kv-layout.")
  private String hostBytes;

  @Option(
      names = "--host-ratio",
      paramLabel = "LIST",
      description =
          "Host capacities as multiples of the device capacity, e.g. 0,2,4 (default: 0, no host"
              + " tier unless --host-tokens or --host-bytes is given).")
  private String hostRatio;

  @Option(
      names = "--l3-tokens",
      paramLabel = "LIST",
      description =
          "L3 store capacities in tokens (default: 0, no L3 tier); an L3 tier needs a host tier.")
  private String l3Tokens;

  @Option(
      names = "--l3-bytes",
      paramLabel = "LIST",
      description = "L3 capacities in bytes; needs --kv-layout.")
  private String l3Bytes;

  @Option(
      names = "--kv-layout",
      paramLabel = "SPEC",
      description =
          "The KV of one token, to turn bytes into tokens:"
              + " layers=N,kv-heads=N,head-dim=N,dtype-bytes=N (K and V of every layer), e.g."
              + " layers=32,kv-heads=8,head-dim=128,dtype-bytes=2 (128 KiB per token).")
  private String kvLayout;

  @Option(
      names = "--ranks",
      paramLabel = "R",
      defaultValue = "1",
      description =
          "Ranks of the group: --device-bytes, --host-bytes and --l3-bytes are then one rank's,"
              + " and a rank holds 1/R of each token's KV, so they hold R times the tokens; by"
              + " heads (--parallel tp: R divides kv-heads) or by positions (--parallel cp: R"
              + " divides kv-heads x head-dim and every --page-size). Needs --kv-layout above 1"
              + " (default: ${DEFAULT-VALUE}).")
  private int ranks;

  @Option(
      names = "--parallel",
      paramLabel = "tp|cp",
      defaultValue = "tp",
      description =
          "How the --ranks split the KV: tp (heads) or cp (positions) (default:"
              + " ${DEFAULT-VALUE}; docs/MODELS.md).")
  private String parallel;

  @Option(
      names = "--eviction",
      paramLabel = "LIST",
      defaultValue = "lru",
      description =
          "Eviction policies, of: lru, lfu, fifo, mru, filo, priority, slru (default:"
              + " ${DEFAULT-VALUE}).")
  private String eviction;

  @Option(
      names = "--write-policy",
      paramLabel = "LIST",
      defaultValue = "write_through",
      description =
          "Write policies, of: write_through, write_through_selective, write_back (default:"
              + " ${DEFAULT-VALUE}); write_back needs a host tier.")
  private String writePolicy;

  @Option(
      names = "--page-size",
      paramLabel = "LIST",
      defaultValue = "16",
      description = "Tokens per page (default: ${DEFAULT-VALUE}).")
  private String pageSize;

  @Option(
      names = "--layer-mix",
      paramLabel = "MIX",
      description =
          "The model's layer mix, one kind per layer: full, swa:W, recurrent, each optionally *N,"
              + " e.g. full,swa:64,recurrent (docs/HYBRID.md). With a recurrent layer, requests"
              + " take recurrent-state snapshots (a device page slot each, every"
              + " --snapshot-interval pages and at each request's last full page) and a match is"
              + " usable only up to its deepest snapshot; with --swa-cache pages (the default) SWA"
              + " layers keep every page in this release (usable = matched). The table and files"
              + " report usable beside matched hits (default: full attention only).")
  private String layerMix;

  @Option(
      names = "--snapshot-interval",
      paramLabel = "LIST",
      description =
          "Pages between two snapshots (recurrent states, and SWA windows with --swa-cache"
              + " windows), each at least 1, e.g. 1,2,4,8,16,32 (one configuration each); needs a"
              + " recurrent layer in --layer-mix, or an SWA layer and --swa-cache windows"
              + " (default: "
              + HybridOptions.DEFAULT_INTERVAL
              + ").")
  private String snapshotInterval;

  @Option(
      names = "--swa-cache",
      paramLabel = "MODE",
      description =
          "How the cache keeps the KV of the mix's SWA layers (docs/HYBRID.md §4, §8): pages"
              + " (every page holds every layer's KV, usable = matched) or windows (a page holds"
              + " the full-attention layers' KV only, each SWA layer's last W-1 positions go into"
              + " the snapshots with the recurrent states, and a match is usable only up to its"
              + " deepest snapshot). A windowed snapshot takes the page slots its bytes need: the"
              + " heads, head dimension and element bytes of --kv-layout, or without it one"
              + " 4-element head of 2-byte elements (the simulator's), over a page of the mix's"
              + " full-attention layers. Capacities stay in tokens of pages, so compare the modes"
              + " at equal bytes by giving windows the larger token capacity (or --kv-layout"
              + " layers= the layers a page holds). Needs an SWA layer in --layer-mix (default:"
              + " pages).")
  private String swaCache;

  @Option(
      names = "--threads",
      paramLabel = "N",
      description = "Configurations replayed at once (default: the available processors).")
  private Integer threads;

  @Option(names = "--csv", paramLabel = "FILE", description = "Also write the results as CSV.")
  private Path csv;

  @Option(
      names = "--json",
      paramLabel = "FILE",
      description =
          "Also write the results as JSON: one entry per configuration with hitRate {device,"
              + " host, l3, total} and usableHitRate alike, then the baselines.")
  private Path json;

  @Option(
      names = "--report",
      paramLabel = "FILE",
      description =
          "Also write a self-contained HTML page with hit-rate-over-capacity curves per policy.")
  private Path report;

  @Option(
      names = "--benchmark",
      description =
          "Also print how long the trace's preparation and each configuration took, and the"
              + " replay speed in prompt tokens per second per core.")
  private boolean benchmark;

  /** Creates the command; picocli fills its fields. */
  ReplayCommand() {}

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    Setup setup = setup();
    // Outputs are checked before the sweep, so a bad path costs nothing (exit 2, like simulate).
    List<String> notes =
        java.util.stream.Stream.of(
                SimulateInputs.checkOutput("--csv", csv),
                SimulateInputs.checkOutput("--json", json),
                SimulateInputs.checkOutput("--report", report))
            .filter(java.util.Objects::nonNull)
            .toList();
    long start = System.nanoTime();
    Workload w = workload();
    ReplayTrace trace = ReplayTrace.of(w, requests == null ? Integer.MAX_VALUE : requests);
    long prepared = System.nanoTime() - start;
    Progress bar = Progress.onTerminal("requests");
    ReplaySummary summary;
    try {
      summary = Replay.run(trace, setup.configurations, setup.threads, throttled(bar));
    } finally {
      bar.done();
    }
    if (layerMix != null) {
      out.println("layers: " + setup.mix().describe() + layersLine(setup));
    }
    out.print(ReplayFormat.table(summary));
    if (trace.cut()) {
      out.printf(
          Locale.ROOT,
          "(the first %d requests of the workload only, as --requests asked)%n",
          trace.size());
    }
    if (benchmark) {
      benchmark(out, summary, prepared);
    }
    write(csv, () -> ReplayFormat.csv(summary));
    write(json, () -> ReplayFormat.json(summary));
    write(
        report,
        () ->
            ReplayReport.html(
                summary,
                hostTokens == null && hostBytes == null,
                "kvtier " + String.join(" ", spec.commandLine().getParseResult().originalArgs())));
    notes.forEach(n -> out.println("note: " + n));
    out.flush();
    return 0;
  }

  /** What the layers line says after the mix. */
  private static String layersLine(Setup setup) {
    HybridOptions.Mix mix = setup.mix();
    String slots =
        setup.slotsPerPageSize().values().stream().distinct().count() == 1
            ? mix.snapshotSlots() + " page slot" + (mix.snapshotSlots() == 1 ? "" : "s")
            : setup.slotsPerPageSize().entrySet().stream()
                .map(e -> e.getValue() + " page slot(s) at --page-size " + e.getKey())
                .collect(java.util.stream.Collectors.joining(", "));
    if (mix.windowedSwa()) {
      return ": --swa-cache windows: pages hold the full-attention KV, SWA windows"
          + (mix.hasRecurrent() ? " and recurrent states" : "")
          + " go into snapshots of "
          + slots
          + " every --snapshot-interval pages (the snap column) and at each request's last full"
          + " page; a match is usable up to its deepest snapshot";
    }
    if (mix.snapshots()) {
      return ": recurrent-state snapshots of "
          + slots
          + " every --snapshot-interval pages (the snap column) and at each request's last full"
          + " page; a match is usable up to its deepest snapshot";
    }
    return ": no recurrent layer, and SWA layers keep every page: every hit is usable";
  }

  /**
   * The sweep and the thread count, every option checked before anything runs.
   *
   * @param configurations the sweep
   * @param threads configurations at once
   * @param mix the mix at the first page size
   * @param slotsPerPageSize the page slots of one snapshot per page size (0 without snapshots)
   */
  record Setup(
      List<ReplayConfiguration> configurations,
      int threads,
      HybridOptions.Mix mix,
      Map<Integer, Integer> slotsPerPageSize) {}

  Setup setup() {
    if (requests != null && requests < 1) {
      throw usage("--requests=" + requests + " must be at least 1");
    }
    int cores = Runtime.getRuntime().availableProcessors();
    int t = threads == null ? cores : threads;
    if (t < 1) {
      throw usage("--threads=" + t + " must be at least 1");
    }
    Function<String, Long> toTokens = layoutTokens();
    List<Integer> pages = list("--page-size", pageSize, v -> positiveInt("--page-size", v));
    RankKvShare share = rankShare();
    if (share != null) {
      for (int page : pages) {
        try {
          share.checkPageSize(page);
        } catch (IllegalArgumentException e) {
          throw usage(e.getMessage());
        }
      }
    }
    List<Long> device =
        exactlyOne(
            "--device-tokens",
            deviceTokens,
            "--device-bytes",
            deviceBytes,
            toTokens,
            true,
            "give the device capacity with --device-tokens (e.g. 1M,3M,10M) or --device-bytes");
    int hostForms =
        (hostTokens != null ? 1 : 0) + (hostBytes != null ? 1 : 0) + (hostRatio != null ? 1 : 0);
    if (hostForms > 1) {
      throw usage(
          "give the host capacity once: --host-tokens, --host-bytes or --host-ratio, not several");
    }
    List<Long> host =
        hostRatio == null && hostForms == 1
            ? exactlyOne(
                "--host-tokens", hostTokens, "--host-bytes", hostBytes, toTokens, false, "")
            : List.of();
    List<Double> ratios =
        hostForms == 0
            ? List.of(0.0)
            : hostRatio == null ? List.of() : list("--host-ratio", hostRatio, this::ratio);
    List<Long> l3 =
        l3Tokens == null && l3Bytes == null
            ? List.of(0L)
            : exactlyOne("--l3-tokens", l3Tokens, "--l3-bytes", l3Bytes, toTokens, false, "");
    List<EvictionPolicy> evictions =
        list("--eviction", eviction, v -> parse("--eviction", v, EvictionPolicy::parse));
    List<WritePolicy> writes =
        list("--write-policy", writePolicy, v -> parse("--write-policy", v, WritePolicy::parse));
    // One mix per page size: the slots of a windowed snapshot depend on the page's bytes.
    Map<Integer, List<HybridOptions.Mix>> mixesPerPage = new LinkedHashMap<>();
    List<Integer> intervals =
        snapshotInterval == null
            ? null
            : list("--snapshot-interval", snapshotInterval, this::interval);
    KvLayout shape = kvLayout == null ? null : parseLayout(kvLayout);
    for (int page : pages) {
      try {
        mixesPerPage.put(
            page,
            HybridOptions.mix(
                layerMix, intervals, snapshotInterval, swaCache, windowShape(shape, page)));
      } catch (IllegalArgumentException e) {
        throw usage(e.getMessage());
      }
    }
    List<HybridOptions.Mix> mixes = mixesPerPage.get(pages.get(0));
    for (int page : pages) {
      for (long d : device) {
        if (d < page) {
          throw usage(
              (deviceTokens != null ? "--device-tokens" : "--device-bytes")
                  + ": a device of "
                  + d
                  + " tokens is less than one page of --page-size "
                  + page
                  + " tokens");
        }
      }
    }
    boolean noHost = host.contains(0L) || ratios.stream().anyMatch(r -> r == 0);
    String hostOption =
        hostTokens != null ? "--host-tokens" : hostBytes != null ? "--host-bytes" : "--host-ratio";
    if (noHost && writes.contains(WritePolicy.WRITE_BACK)) {
      throw usage(
          "--write-policy write_back needs a host tier, but "
              + hostOption
              + (hostForms == 0 ? " is not given (no host tier)" : " includes 0")
              + ": give host capacities above 0, or drop write_back");
    }
    if (noHost && l3.stream().anyMatch(v -> v > 0)) {
      throw usage(
          (l3Tokens != null ? "--l3-tokens" : "--l3-bytes")
              + " needs a host tier (L3 pages reach the device through host memory), but "
              + hostOption
              + (hostForms == 0 ? " is not given" : " includes 0")
              + ": give host capacities above 0, or replay the L3 sizes in a run of their own");
    }
    Map<Integer, Integer> slotsPerPage = new LinkedHashMap<>();
    mixesPerPage.forEach((page, m) -> slotsPerPage.put(page, m.get(0).snapshotSlots()));
    for (long d : device) {
      for (int page : pages) {
        int slots = slotsPerPage.get(page);
        if (slots > 0 && d / page <= slots) {
          throw usage(
              (deviceTokens != null ? "--device-tokens" : "--device-bytes")
                  + ": a device of "
                  + d
                  + " tokens holds "
                  + d / page
                  + " page(s) of --page-size "
                  + page
                  + ", too few for --layer-mix "
                  + mixes.get(0).text()
                  + (mixes.get(0).windowedSwa()
                      ? " with --swa-cache windows, whose snapshots take "
                          + slots
                          + " page slot(s) each beside the KV: give at least "
                      : ", whose recurrent-state snapshots take a page slot each beside the KV:"
                          + " give at least ")
                  + (slots + 1) * page
                  + " tokens");
        }
      }
    }
    // Page size is the sweep's first axis, so a sweep per page size, one after the other, keeps
    // the order of one sweep over them all.
    List<ReplayConfiguration> configurations = new ArrayList<>();
    try {
      for (int page : pages) {
        configurations.addAll(
            new ReplaySweep(
                    List.of(page),
                    device,
                    host,
                    ratios,
                    l3,
                    evictions,
                    writes,
                    slotsPerPage.get(page),
                    mixesPerPage.get(page).stream()
                        .map(HybridOptions.Mix::snapshotIntervalPages)
                        .toList())
                .configurations());
      }
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
    return new Setup(configurations, t, mixes.get(0), slotsPerPage);
  }

  private Workload workload() {
    try {
      return Workloads.parse(workload);
    } catch (TraceFormatException e) {
      throw new UnusableInputException("--workload: " + e.getMessage(), e);
    } catch (IllegalArgumentException e) {
      throw usage("--workload: " + e.getMessage());
    }
  }

  /** Tokens from a token count, or from bytes with the layout; the function sees raw text. */
  private Function<String, Long> layoutTokens() {
    if (ranks < 1) {
      throw usage("--ranks=" + ranks + " must be at least 1");
    }
    parallelism(); // a bad --parallel is an error even without --kv-layout
    if (kvLayout == null) {
      if (ranks > 1) {
        throw usage(
            "--ranks "
                + ranks
                + " makes the byte capacities one rank's: give them with --device-bytes and"
                + " --kv-layout (a token capacity is the group's whatever the ranks)");
      }
      return null;
    }
    // One token's bytes on one rank: the layout's over the ranks, either way.
    long bytesPerToken = rankShare().bytesPerToken();
    return v -> bytes(v) / bytesPerToken;
  }

  private Parallelism parallelism() {
    return parse("--parallel", parallel, v -> Parallelism.parse(v, 1));
  }

  /** One rank's share of the --kv-layout, checked against --ranks and --parallel; null without. */
  private RankKvShare rankShare() {
    if (kvLayout == null) {
      return null;
    }
    KvLayout shape = parseLayout(kvLayout);
    try {
      return new RankKvShare(shape, ranks, parallelism());
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
  }

  private List<Long> exactlyOne(
      String tokensName,
      String tokensValue,
      String bytesName,
      String bytesValue,
      Function<String, Long> toTokens,
      boolean required,
      String missing) {
    if (tokensValue != null && bytesValue != null) {
      throw usage("give " + tokensName + " or " + bytesName + ", not both");
    }
    if (tokensValue == null && bytesValue == null) {
      if (required) {
        throw usage("Missing capacity: " + missing);
      }
      return List.of();
    }
    if (tokensValue != null) {
      return list(tokensName, tokensValue, v -> count(tokensName, v));
    }
    if (toTokens == null) {
      throw usage(
          bytesName
              + " needs --kv-layout to turn bytes into tokens, e.g. --kv-layout"
              + " layers=32,kv-heads=8,head-dim=128,dtype-bytes=2");
    }
    return list(
        bytesName,
        bytesValue,
        v -> {
          try {
            return toTokens.apply(v);
          } catch (IllegalArgumentException e) {
            throw usage(bytesName + ": " + e.getMessage());
          }
        });
  }

  private <T> List<T> list(String option, String value, Function<String, T> parse) {
    List<T> values = new ArrayList<>();
    for (String part : value.split(",", -1)) {
      if (part.isBlank()) {
        throw usage(option + " '" + value + "' has an empty item: give a comma-separated list");
      }
      values.add(parse.apply(part.strip()));
    }
    return values;
  }

  private long count(String option, String value) {
    Matcher m = COUNT.matcher(value);
    if (!m.matches()) {
      throw usage(
          option
              + ": '"
              + value
              + "' is not a token count: use a number with an optional K, M or G suffix (1M ="
              + " 1,000,000 tokens), e.g. 1M,3M,10M");
    }
    double unit =
        switch (m.group(2).toUpperCase(Locale.ROOT)) {
          case "K" -> 1e3;
          case "M" -> 1e6;
          case "G" -> 1e9;
          default -> 1;
        };
    double tokens = Double.parseDouble(m.group(1)) * unit;
    if (tokens > Long.MAX_VALUE / 2) {
      throw usage(option + ": '" + value + "' is too large");
    }
    return (long) tokens;
  }

  private int positiveInt(String option, String value) {
    try {
      int n = Integer.parseInt(value);
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // the message below says what is accepted
    }
    throw usage(option + ": '" + value + "' is not a whole number of at least 1");
  }

  /** One value of {@code --snapshot-interval}: a whole number; the range is checked after. */
  private int interval(String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw usage(
          "--snapshot-interval: '" + value + "' is not a whole number of pages (1 or more)");
    }
  }

  private double ratio(String value) {
    try {
      double r = Double.parseDouble(value);
      if (r >= 0 && Double.isFinite(r)) {
        return r;
      }
    } catch (NumberFormatException e) {
      // the message below says what is accepted
    }
    throw usage("--host-ratio: '" + value + "' is not a number >= 0");
  }

  private <T> T parse(String option, String value, Function<String, T> parser) {
    try {
      return parser.apply(value);
    } catch (IllegalArgumentException e) {
      throw usage(option + ": " + e.getMessage());
    }
  }

  private static long bytes(String value) {
    return ConfigValues.parseBytes("size", value);
  }

  /**
   * The per-rank KV shape a windowed snapshot's slots are computed from: {@code --kv-layout}'s
   * heads, head dimension and element bytes if given, else the simulator's pool layout; at the
   * page size.
   */
  private static KvLayout windowShape(KvLayout given, int page) {
    KvLayout s = given != null ? given : io.kvtier.simulator.SimulationConfig.kvLayout(page);
    return new KvLayout(s.layers(), s.kvHeads(), s.headDim(), s.dtypeBytes(), page);
  }

  /** {@code --kv-layout}, with a page of one token. */
  private KvLayout parseLayout(String value) {
    try {
      return RankKvShare.parseLayout(value);
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
  }

  private ReplayProgress throttled(Progress bar) {
    // The bar redraws when the count lands on a hundredth; the replay reports in steps.
    return (done, total) -> {
      long step = Math.max(1, total / 100);
      bar.ticks(done == total ? total : done - done % step, total);
    };
  }

  private static void benchmark(PrintWriter out, ReplaySummary summary, long preparedNanos) {
    out.printf(
        Locale.ROOT,
        "benchmark: trace prepared in %.3f s; %d configurations on %d threads in %.3f s;"
            + " %.1f M prompt tokens per CPU second (per core) over all configurations%n",
        preparedNanos / 1e9,
        summary.results().size(),
        summary.threads(),
        summary.wallNanos() / 1e9,
        summary.promptTokensPerCpuSecond() / 1e6);
    for (ReplayResult r : summary.results()) {
      if (r.nanos() > 0 && r.kind() != ReplayResult.Kind.NO_CACHE) {
        out.printf(
            Locale.ROOT,
            "  %-9s %-52s %7.3f s wall %7.3f s CPU %8.1f M prompt tokens/CPU s%n",
            r.kind().label(),
            r.configuration().label(),
            r.nanos() / 1e9,
            r.cpuNanos() / 1e9,
            r.promptTokensPerCpuSecond() / 1e6);
      }
    }
  }

  private static void write(Path file, java.util.function.Supplier<String> content) {
    if (file == null) {
      return;
    }
    try {
      Files.writeString(file, content.get(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
    }
  }

  private ParameterException usage(String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
