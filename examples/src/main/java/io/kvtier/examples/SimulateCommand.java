package io.kvtier.examples;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.examples.report.Progress;
import io.kvtier.examples.report.SimulationReport;
import io.kvtier.examples.report.TtftModel;
import io.kvtier.testkit.sim.AckDelay;
import io.kvtier.testkit.sim.MultiRankSimulator;
import io.kvtier.testkit.sim.SimulationConfig;
import io.kvtier.testkit.sim.SimulationResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier simulate}: the deterministic multi-rank simulator of the testkit on the {@code
 * sim} backend and the {@code local} collective. Without options it runs 4 ranks of small
 * multi-turn chats in a few seconds.
 */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Runs R cache replicas (ranks) as threads on the simulated backend, in virtual time, and"
          + " checks after every tick that their replicated state and collective schedules are"
          + " identical, that no page leaks and that every page loaded back holds the right KV.",
      "Same seed, same result. Exit status: 0 when every check passed, 1 when digests differ,"
          + " ranks desync, pages leak or a loaded page is wrong (or on another failure),"
          + " 2 on a usage error."
    })
final class SimulateCommand implements Callable<Integer> {
  private static final SimulationConfig DEFAULTS = SimulationConfig.builder().build();
  /** Held here: java.util.logging keeps loggers weakly, and a collected one forgets its level. */
  private static final Logger CACHE_LOG = Logger.getLogger("io.kvtier.core.cache");

  @Spec private CommandSpec spec;

  @Option(names = "--ranks", description = "Ranks, 1 to 8 (default: ${DEFAULT-VALUE}).")
  private int ranks = DEFAULTS.ranks();

  @Option(names = "--device", paramLabel = "NAME", description = "Device and host pool"
      + " provider: sim (virtual time), asserting (sim with use-after-free checks), or another"
      + " provider on the module path, whose real copy times make runs non-deterministic"
      + " (default: ${DEFAULT-VALUE}).")
  private String device = DEFAULTS.device();

  @Option(names = "--workload", paramLabel = "SPEC", description = "Workload spec: shared-prefix,"
      + " multiturn, doc-qa (each with :key=value,...), fixed:shared-prefix, fixed:multiturn,"
      + " jsonl:PATH, mooncake:PATH (default: ${DEFAULT-VALUE}).")
  private String workload = DEFAULTS.workload();

  @Option(names = "--requests", description = "The most requests taken from the workload,"
      + " 0 for all (default: ${DEFAULT-VALUE}).")
  private int requests = DEFAULTS.requests();

  @Option(names = "--page-size", description = "Tokens per page (default: ${DEFAULT-VALUE}).")
  private int pageSize = DEFAULTS.pageSize();

  @Option(names = "--device-pages",
      description = "Device pool pages per rank (default: ${DEFAULT-VALUE}).")
  private int devicePages = DEFAULTS.devicePages();

  @Option(names = "--host-ratio", description = "Host pool size relative to the device pool,"
      + " above 1, or 0 for no host tier (default: ${DEFAULT-VALUE}).")
  private double hostRatio = DEFAULTS.hostRatio();

  @Option(names = "--write-policy", paramLabel = "POLICY", description = "write_through,"
      + " write_through_selective or write_back (default: ${DEFAULT-VALUE}).")
  private String writePolicy = DEFAULTS.writePolicy().configName();

  @Option(names = "--eviction", paramLabel = "POLICY",
      description = "lru, lfu, fifo, mru, filo, priority or slru (default: ${DEFAULT-VALUE}).")
  private String eviction = DEFAULTS.eviction().configName();

  @Option(names = "--ack-delay", paramLabel = "DIST", description = "Copy delays per rank:"
      + " uniform, skewed (one slow rank), heavy-tail (random long stalls) or stall (stalls"
      + " injected and released later) (default: ${DEFAULT-VALUE}).")
  private String ackDelay = DEFAULTS.ackDelay().cliName();

  @Option(names = "--seed", description = "Seed of the workload, copy timing, stalls and aborts"
      + " (default: ${DEFAULT-VALUE}).")
  private long seed = DEFAULTS.seed();

  @Option(names = "--ticks", description = "Ticks during which requests arrive; then the run"
      + " drains (default: ${DEFAULT-VALUE}).")
  private int ticks = DEFAULTS.ticks();

  @Option(names = "--digest-interval", description = "Ticks between the engine's replica digest"
      + " checks, 0 for none; the simulator compares digests after every tick anyway"
      + " (default: ${DEFAULT-VALUE}).")
  private int digestInterval = DEFAULTS.digestInterval();

  @Option(names = "--abort-probability",
      description = "Chance per tick that one live request is aborted (default: ${DEFAULT-VALUE}).")
  private double abortProbability = DEFAULTS.abortProbability();

  @Option(names = "--failure-probability",
      description = "Chance that a copy batch fails (default: ${DEFAULT-VALUE}).")
  private double failureProbability = DEFAULTS.failureProbability();

  @Option(names = "--chunk", description = "Prompt tokens prefilled per tick (chunked prefill)"
      + " (default: ${DEFAULT-VALUE}).")
  private int chunk = DEFAULTS.chunkTokens();

  @Option(names = "--max-running",
      description = "Requests running at once (default: ${DEFAULT-VALUE}).")
  private int maxRunning = DEFAULTS.maxRunning();

  @Option(names = "--json", paramLabel = "FILE",
      description = "Also write the result as one JSON object to FILE.")
  private Path json;

  @Option(names = "--report", paramLabel = "FILE.html", description = "Also write a"
      + " self-contained HTML page with SVG charts of the run (hit rate per tier and tier"
      + " occupancy over time, the TTFT distribution with and without the cache) to FILE.")
  private Path report;

  @Option(names = "--benchmark", description = "Instead of one run: ticks per second and"
      + " collectives per tick at 1, 2, 4 and 8 ranks, 5 runs each after 2 warm-up runs.")
  private boolean benchmark;

  @Override
  public Integer call() throws IOException {
    SimulationConfig config = config();
    PrintWriter out = spec.commandLine().getOut();
    if (config.failureProbability() > 0) {
      // Injected copy failures are the point of the run: one warning per failed copy per rank
      // would bury the summary, which counts them.
      CACHE_LOG.setLevel(Level.SEVERE);
    }
    if (benchmark) {
      int runs = 5;
      List<SimulateBenchmark.Row> rows = SimulateBenchmark.run(config, runs);
      SimulateBenchmark.print(out, config, runs, rows);
      return rows.stream().allMatch(SimulateBenchmark.Row::passed) ? 0 : KvTierCli.EXIT_FAILURE;
    }
    Progress progress = Progress.onTerminal("ticks");
    SimulationResult result = new MultiRankSimulator(config).run(progress);
    progress.done();
    String summary = SimulationSummary.of(config, result);
    out.print(summary);
    out.flush();
    if (json != null) {
      TtftModel.Estimate ttft = TtftModel.DEFAULT.estimate(result, config.pageSize());
      Files.writeString(createParent(json), SimulationJson.of(result, ttft) + "\n",
          StandardCharsets.UTF_8);
    }
    if (report != null) {
      Files.writeString(createParent(report),
          SimulationReport.html(config, summary, result, TtftModel.DEFAULT),
          StandardCharsets.UTF_8);
      out.println("report    " + report);
    }
    out.flush();
    return result.passed() ? 0 : KvTierCli.EXIT_FAILURE;
  }

  private static Path createParent(Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    return file;
  }

  private SimulationConfig config() {
    try {
      return SimulationConfig.builder()
          .ranks(ranks)
          .device(device)
          .workload(workload)
          .requests(requests)
          .pageSize(pageSize)
          .devicePages(devicePages)
          .hostRatio(hostRatio)
          .writePolicy(parse("--write-policy", writePolicy, WritePolicy::parse))
          .eviction(parse("--eviction", eviction, EvictionPolicy::parse))
          .ackDelay(parse("--ack-delay", ackDelay, AckDelay::parse))
          .seed(seed)
          .ticks(ticks)
          .digestInterval(digestInterval)
          .abortProbability(abortProbability)
          .failureProbability(failureProbability)
          .chunkTokens(chunk)
          .maxRunning(maxRunning)
          .build();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e, null,
          Optional.ofNullable(e.getMessage()).orElse(""));
    }
  }

  private <T> T parse(String option, String value, Function<String, T> parser) {
    try {
      return parser.apply(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(option + ": " + e.getMessage(), e);
    }
  }
}
