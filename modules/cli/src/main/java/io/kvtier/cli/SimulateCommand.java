package io.kvtier.cli;

import io.kvtier.asserting.Providers;
import io.kvtier.cli.report.Progress;
import io.kvtier.cli.report.SimulationReport;
import io.kvtier.cli.report.TtftModel;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.LoadFailurePolicy;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.TickStep;
import io.kvtier.simulator.AckDelay;
import io.kvtier.simulator.L3Simulation;
import io.kvtier.simulator.MultiRankSimulator;
import io.kvtier.simulator.RankFailureInjection;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationConfigBuilder;
import io.kvtier.simulator.SimulationResult;
import io.kvtier.spi.Availability;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.config.ConfigValues;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier simulate}: the deterministic multi-rank simulator (io.kvtier.simulator) on the
 * {@code sim} backend and the {@code local} collective. Without options it runs 4 ranks of small
 * multi-turn chats in a few seconds. With {@code --collective mpi} or {@code hazelcast} each
 * process runs one rank ({@link MultiRankSimulator#runRank}), and the result is the one the
 * {@code local} collective gives for the same options.
 */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Runs R cache replicas (ranks) as threads on the simulated backend, in virtual time, and"
          + " checks after every tick that their replicated state and collective schedules are"
          + " identical, that no page leaks and that every page loaded back holds the right KV.",
      "Each rank may also be a process of its own, joined by --collective mpi (mpirun -np R"
          + " bin/kvtier simulate --collective mpi) or hazelcast (R processes, each with --rank;"
          + " scripts/simulate-ranks.sh starts them); the result is the one local gives.",
      "Same seed, same result. Exit status: 0 when every check passed, 1 when digests differ,"
          + " ranks desync, pages leak or a loaded page is wrong, a rank failed (--fail-rank"
          + " injects that), on another failure, or with --strict when a warning was printed; 2"
          + " on a usage error or an input that cannot be used (a missing trace, an unavailable"
          + " provider, an unwritable --json or --report path)."
    })
final class SimulateCommand implements Callable<Integer> {
  private static final SimulationConfig DEFAULTS = SimulationConfig.builder().build();

  /**
   * The default chance per tick of an abort: aborts exercise the engine's abort path, but at the
   * simulator's 1% per tick a request that waits long is likely aborted, and a long run loses most
   * of its requests.
   */
  static final double DEFAULT_ABORT_PROBABILITY = 0.001;

  /** Held here: java.util.logging keeps loggers weakly, and a collected one forgets its level. */
  private static final Logger CACHE_LOG = Logger.getLogger("io.kvtier.core.cache");

  /** Held so that the level sticks; the hazelcast collective logs its members at INFO. */
  private static final Logger HAZELCAST_LOG = Logger.getLogger("com.hazelcast");

  /** Held so that the level sticks; the local collective logs every desync as a warning. */
  private static final Logger LOCAL_COLLECTIVE_LOG = Logger.getLogger("io.kvtier.backend.sim");

  @Spec private CommandSpec spec;

  private Placement placement;

  /** The byte capacity of --kv-layout, null without it. */
  private ByteCapacity capacity;

  /** What the checks before the run did and the summary says: a directory created. */
  private final List<String> notes = new java.util.ArrayList<>();

  @Option(
      names = "--ranks",
      description = "Ranks, 1 to " + SimulationConfig.MAX_RANKS + " (default: ${DEFAULT-VALUE}).")
  private int ranks = DEFAULTS.ranks();

  @Option(
      names = "--device",
      paramLabel = "NAME",
      description =
          "Device and host pool"
              + " provider: sim (virtual time), asserting (sim with use-after-free checks), or another"
              + " provider on the module path, whose real copy times make runs non-deterministic"
              + " (default: ${DEFAULT-VALUE}).")
  private String device = DEFAULTS.device();

  @Option(
      names = "--workload",
      paramLabel = "SPEC",
      description =
          "Workload spec: shared-prefix,"
              + " multiturn, doc-qa (each with :key=value,...), fixed:shared-prefix, fixed:multiturn,"
              + " jsonl:PATH, mooncake:PATH (docs/WORKLOADS.md). The generators run sized for the"
              + " default pools (multiturn:conversations=48,turns=4,first=96,answer=16,question=32;"
              + " shared-prefix:groups=16,system=512,question=64,requests=192,output=16;"
              + " doc-qa:documents=6,length=1024,asks=4,question=16,output=16); parameters given"
              + " replace those one by one (default: ${DEFAULT-VALUE}).")
  private String workload = CliWorkloads.DEFAULT;

  @Option(
      names = "--requests",
      description =
          "The most requests taken from the workload," + " 0 for all (default: ${DEFAULT-VALUE}).")
  private int requests = DEFAULTS.requests();

  @Option(names = "--page-size", description = "Tokens per page (default: ${DEFAULT-VALUE}).")
  private int pageSize = DEFAULTS.pageSize();

  @Option(
      names = "--device-pages",
      description = "Device pool pages per rank (default: ${DEFAULT-VALUE}).")
  private int devicePages = DEFAULTS.devicePages();

  @Option(
      names = "--kv-layout",
      paramLabel = "SPEC",
      description =
          "A model's KV layout, layers=N,kv-heads=N,head-dim=N,dtype-bytes=N (for example"
              + " layers=32,kv-heads=8,head-dim=128,dtype-bytes=2, 128 KiB per token), so that"
              + " --device-bytes gives the device pages: one rank holds 1/R of each token's KV"
              + " (--parallel). The simulated pools keep their own small pages; this sizes them."
              + " The summary says the bytes per rank either way.")
  private String kvLayout;

  @Option(
      names = "--device-bytes",
      paramLabel = "SIZE",
      description =
          "Instead of --device-pages: one rank's device memory (1GiB, 80GB), which holds"
              + " SIZE / (page-size x the layout's bytes per token / ranks) pages, so R ranks hold"
              + " R times one rank's tokens. Needs --kv-layout.")
  private String deviceBytes;

  @Option(
      names = "--parallel",
      paramLabel = "tp|cp",
      description =
          "How the --ranks split each token's KV of --kv-layout: tp (by heads: the ranks divide"
              + " kv-heads) or cp (by positions: the ranks divide kv-heads x head-dim and"
              + " --page-size); a rank holds 1/R of the bytes either way (default: tp;"
              + " docs/MODELS.md). Needs --kv-layout.")
  private String parallel;

  @Option(
      names = "--host-ratio",
      description =
          "Host pool size relative to the device pool,"
              + " above 1, or 0 for no host tier (default: ${DEFAULT-VALUE}).")
  private double hostRatio = DEFAULTS.hostRatio();

  @Option(
      names = "--write-policy",
      paramLabel = "POLICY",
      description =
          "write_through," + " write_through_selective or write_back (default: ${DEFAULT-VALUE}).")
  private String writePolicy = DEFAULTS.writePolicy().configName();

  @Option(
      names = "--eviction",
      paramLabel = "POLICY",
      description = "lru, lfu, fifo, mru, filo, priority or slru (default: ${DEFAULT-VALUE}).")
  private String eviction = DEFAULTS.eviction().configName();

  @Option(
      names = "--ack-delay",
      paramLabel = "DIST",
      description =
          "Copy delays per rank:"
              + " uniform, skewed (one slow rank), heavy-tail (random long stalls) or stall (stalls"
              + " injected and released later) (default: ${DEFAULT-VALUE}).")
  private String ackDelay = DEFAULTS.ackDelay().cliName();

  @Option(
      names = "--seed",
      description =
          "Seed of the workload, copy timing, stalls and aborts" + " (default: ${DEFAULT-VALUE}).")
  private long seed = DEFAULTS.seed();

  @Option(
      names = "--ticks",
      description =
          "Ticks during which requests arrive; then the run"
              + " drains (default: ${DEFAULT-VALUE}).")
  private int ticks = DEFAULTS.ticks();

  @Option(
      names = "--digest-interval",
      description =
          "Ticks between the engine's replica digest"
              + " checks, 0 for none; the simulator compares digests after every tick anyway"
              + " (default: ${DEFAULT-VALUE}).")
  private int digestInterval = DEFAULTS.digestInterval();

  @Option(
      names = "--full-check-interval",
      paramLabel = "N",
      description =
          "Ticks between the full invariant check of each rank's cache; the incremental check of"
              + " what changed runs after the other ticks, and a full check at the end. 1 checks"
              + " everything after every tick (slow on large pools); a broken rule that only the"
              + " full check sees is caught within N ticks (default: ${DEFAULT-VALUE}).")
  private int fullCheckInterval = DEFAULTS.fullCheckInterval();

  @Option(
      names = "--abort-probability",
      description = "Chance per tick that one live request is aborted (default: ${DEFAULT-VALUE}).")
  private double abortProbability = DEFAULT_ABORT_PROBABILITY;

  @Option(
      names = "--failure-probability",
      description = "Chance that a copy batch fails (default: ${DEFAULT-VALUE}).")
  private double failureProbability = DEFAULTS.failureProbability();

  @Option(
      names = "--flip-probability",
      description =
          "Chance that a host-to-device copy finds one bit of its source host page flipped:"
              + " the host tier corrupted at rest, which every restore's CRC32C must catch"
              + " (default: ${DEFAULT-VALUE}).")
  private double flipProbability = DEFAULTS.flipProbability();

  @Option(
      names = "--on-load-failure",
      paramLabel = "recompute|fail",
      description =
          "What a request whose load-back failed does: recompute (back to the queue; the"
              + " failed prefix has left the cache) or fail (ends, as a 503 would in serve)"
              + " (default: ${DEFAULT-VALUE}).")
  private String onLoadFailure = "recompute";

  @Option(
      names = "--insert-at-finish",
      description =
          "Insert a request's pages into the cache only when it finishes, not after each"
              + " prefill step, and admit requests without waiting for a shared prompt's step:"
              + " requests that come while it runs compute its prompt again (how the engine"
              + " behaved before 2026-12-05; for comparison).")
  private boolean insertAtFinish;

  @Option(
      names = "--chunk",
      description =
          "Prompt tokens prefilled per tick (chunked prefill)" + " (default: ${DEFAULT-VALUE}).")
  private int chunk = DEFAULTS.chunkTokens();

  @Option(
      names = "--arrivals-per-tick",
      paramLabel = "N",
      description =
          "The most requests that arrive in one tick, while the queue has room: a burst of"
              + " requests with one system prompt is one tick's arrivals (default:"
              + " ${DEFAULT-VALUE}).")
  private int arrivalsPerTick = DEFAULTS.arrivalsPerTick();

  @Option(
      names = "--max-running",
      description = "Requests running at once (default: ${DEFAULT-VALUE}).")
  private int maxRunning = DEFAULTS.maxRunning();

  @Option(
      names = "--max-prefill-tokens",
      paramLabel = "TOKENS",
      description =
          "Prompt tokens all running requests together prefill per tick, taken in admission"
              + " order, each at most --chunk (default: no budget, each request its --chunk).")
  private Integer maxPrefillTokens;

  @Option(
      names = "--layer-mix",
      paramLabel = "MIX",
      description =
          "The model's layer mix, one kind per layer: full, swa:W (sliding window of W tokens),"
              + " recurrent, each optionally *N for N such layers, e.g. full,swa:64,recurrent"
              + " (docs/HYBRID.md). A mix with a recurrent layer makes requests take recurrent-state"
              + " snapshots (one page slot each, every --snapshot-interval pages and at each"
              + " request's last full page), and a match is usable only up to its deepest"
              + " snapshot; with --swa-cache pages (the default) SWA layers keep every page in this"
              + " release, so their matches are all usable (usable = matched). The summary and"
              + " --json report usable beside matched hit tokens (default: full attention only).")
  private String layerMix;

  @Option(
      names = "--snapshot-interval",
      paramLabel = "K",
      description =
          "Pages between two snapshots of a request (recurrent states, and SWA windows with"
              + " --swa-cache windows), at least 1; needs a recurrent layer in --layer-mix, or an"
              + " SWA layer and --swa-cache windows (default: "
              + SimulationConfig.DEFAULT_SNAPSHOT_INTERVAL_PAGES
              + ").")
  private Integer snapshotInterval;

  @Option(
      names = "--swa-cache",
      paramLabel = "MODE",
      description =
          "How the cache keeps the KV of the mix's SWA layers (docs/HYBRID.md §4, §8): pages"
              + " (every page holds every layer's KV, usable = matched) or windows (a page holds"
              + " the full-attention layers' KV only, and each SWA layer's last W-1 positions go"
              + " into the snapshots with the recurrent states: snapshots every"
              + " --snapshot-interval pages and at each request's last full page, and a match is"
              + " usable only up to its deepest snapshot). With windows a snapshot takes the page"
              + " slots its bytes need for the mix's layers of the simulator's head shape (one"
              + " 4-element head of 2-byte elements per rank; 4 slots for full,swa:64 at 16-token"
              + " pages); the simulator counts those slots in the pool and checks the pattern"
              + " written into them, it does not shrink its pages: a page of either mode is one"
              + " slot, so compare the modes at equal bytes by giving windows more --device-pages"
              + " (scripts/hybrid-sweep.sh). Needs an SWA layer in --layer-mix (default:"
              + " pages).")
  private String swaCache;

  @Option(
      names = "--l3",
      paramLabel = "STORE",
      description =
          "L3 store each rank opens: none,"
              + " memory, file or hazelcast (default: ${DEFAULT-VALUE}).")
  private String l3 = "none";

  @Option(
      names = "--l3-dir",
      paramLabel = "DIR",
      description = "Directory of the file store" + " (default: a new temporary directory).")
  private Path l3Dir;

  @Option(
      names = "--l3-mib",
      description = "L3 store capacity per rank in MiB" + " (default: ${DEFAULT-VALUE}).")
  private long l3Mib = L3Simulation.NONE.capacityBytes() >> 20;

  @Option(
      names = "--l3-prefetch-policy",
      paramLabel = "POLICY",
      description = "best_effort," + " wait_complete or timeout (default: ${DEFAULT-VALUE}).")
  private String l3Policy = L3Simulation.NONE.prefetchPolicy().configName();

  @Option(
      names = "--l3-prefetch-threshold",
      description =
          "Fewest tokens of an L3 hit worth" + " prefetching (default: ${DEFAULT-VALUE}).")
  private int l3Threshold = L3Simulation.NONE.prefetchThreshold();

  @Option(
      names = "--l3-step-us",
      description =
          "Virtual microseconds one store step (a put,"
              + " a probe, 8 fetched pages) takes on rank 0 (default: ${DEFAULT-VALUE}).")
  private long l3StepMicros = L3Simulation.NONE.stepMicros();

  @Option(
      names = "--l3-skew",
      description =
          "How much slower each further rank's store is:"
              + " rank r takes step * (1 + skew * r) (default: ${DEFAULT-VALUE}).")
  private double l3Skew = L3Simulation.NONE.rankSkew();

  @Option(
      names = "--l3-timeout-ms",
      description = "Base of the prefetch timeout in virtual ms" + " (default: ${DEFAULT-VALUE}).")
  private long l3TimeoutMs = L3Simulation.NONE.timeout().toMillis();

  @Option(
      names = "--l3-faults",
      description =
          "Chance that a page is lost at its put or fails"
              + " at its read, per rank (default: ${DEFAULT-VALUE}).")
  private double l3Faults = L3Simulation.NONE.faultProbability();

  @Option(
      names = "--l3-flip-probability",
      description =
          "Chance that a page an L3 read is about to fetch has one bit of its stored form"
              + " flipped first: the store corrupted at rest, which the store's own CRC32C must"
              + " catch, as a counted miss (default: ${DEFAULT-VALUE}).")
  private double l3FlipProbability = L3Simulation.NONE.flipProbability();

  @Option(
      names = "--json",
      paramLabel = "FILE",
      description = "Also write the result as one JSON object to FILE.")
  private Path json;

  @Option(
      names = "--report",
      paramLabel = "FILE.html",
      description =
          "Also write a"
              + " self-contained HTML page with SVG charts of the run (hit rate per tier and tier"
              + " occupancy over time, the TTFT distribution with and without the cache) to FILE.")
  private Path report;

  @Option(
      names = "--strict",
      description =
          "Fail (exit 1) when the run printed a warning: most requests rejected or aborted, or"
              + " part of the workload never replayed (cut by --ticks or --requests).")
  private boolean strict;

  @Option(
      names = "--benchmark",
      description =
          "Instead of one run: ticks per second and"
              + " collectives per tick at 1, 2, 4 and 8 ranks, 5 runs each after 2 warm-up runs.")
  private boolean benchmark;

  @Option(
      names = "--collective",
      paramLabel = "NAME",
      description =
          "The collective that"
              + " joins the ranks: local (every rank a thread of this process), or one rank per process:"
              + " mpi (start the processes with mpirun -np R; rank and world size come from mpirun, and"
              + " --ranks, if given, must agree) or hazelcast (start R processes, each with its own"
              + " --rank; settings with --collective-property). With one rank per process, rank 0 prints"
              + " the summary and writes --json and --report, and every rank prints its final digest"
              + " check; --benchmark needs local (default: ${DEFAULT-VALUE}).")
  private String collective = SimulationConfig.LOCAL_COLLECTIVE;

  @Option(
      names = "--rank",
      description =
          "This process's rank, 0 to ranks-1, when each rank is"
              + " a process and the launcher does not assign ranks (hazelcast; under mpirun the MPI rank"
              + " is taken, and --rank, if given, must agree). Not with local.")
  private Integer rank;

  @Option(
      names = "--collective-property",
      paramLabel = "KEY=VALUE",
      description =
          "A setting of"
              + " the collective provider, as a full key, repeatable: for example"
              + " hazelcast.cluster-name=sim1, hazelcast.port=5801, hazelcast.cp-member-count=3 or"
              + " mpi.inline-longs=8. Every process of a run must get the same settings.")
  private Map<String, String> collectiveProperties = new LinkedHashMap<>();

  @Option(
      names = "--group",
      paramLabel = "NAME",
      description =
          "The group name the rank"
              + " processes meet in, equal in every process (default: kvtier-simulate-SEED).")
  private String group;

  @Option(
      names = "--watchdog",
      paramLabel = "SECONDS",
      description =
          "How long one collective"
              + " call may wait for the other ranks before the run fails; with one rank per process it"
              + " also bounds how far apart the processes may start (default: ${DEFAULT-VALUE}).")
  private long watchdogSeconds = DEFAULTS.watchdog().toSeconds();

  @Option(
      names = "--fail-rank",
      paramLabel = "R",
      description =
          "Make rank R's step fail at --fail-tick, to see the group fail together: every rank"
              + " stops at its next collective with failure RANK_FAILED naming rank R, the tick"
              + " and the step, long before --watchdog; exit 1. With --fail-tick.")
  private Integer failRank;

  @Option(
      names = "--fail-tick",
      paramLabel = "T",
      description =
          "The tick at which rank --fail-rank fails, from 0; a step that calls nothing at T"
              + " (nothing admitted, nothing running) fails at the next tick that does.")
  private Long failTick;

  @Option(
      names = "--fail-step",
      paramLabel = "STEP",
      description =
          "The step that fails: receive (the recv broadcast), sync (the sync reduction, in ticks"
              + " with copies outstanding), admit (an admission), forward (the model), finish (a"
              + " finished request) or check (the digest check) (default: ${DEFAULT-VALUE}).")
  private String failStep = RankFailureInjection.stepName(TickStep.FORWARD);

  @Option(
      names = "--fail-kind",
      paramLabel = "KIND",
      description =
          "What the failing step throws: exception (a RuntimeException) or error (an Error, as"
              + " an out-of-memory error would be) (default: ${DEFAULT-VALUE}).")
  private String failKind = RankFailureInjection.Kind.EXCEPTION.cliName();

  @Override
  public Integer call() throws IOException {
    HAZELCAST_LOG.setLevel(Level.WARNING);
    SimulationConfig config = config();
    PrintWriter out = spec.commandLine().getOut();
    if (config.rankFailure().enabled()) {
      // The failed rank tells the others through a desync, which the local collective logs
      // with advice about branches on rank-local state: wrong here, and the summary says what
      // failed.
      LOCAL_COLLECTIVE_LOG.setLevel(Level.SEVERE);
    }
    if (!config.threadRanks()) {
      return callRank(config, out);
    }
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
    SimulationResult result;
    try {
      result = new MultiRankSimulator(config).run(progress);
    } catch (IllegalArgumentException e) {
      // Thrown before any tick: the workload cannot be read, or the pools cannot be built.
      throw new UnusableInputException(e.getMessage(), e);
    } finally {
      progress.done();
    }
    return writeOutputs(config, result, out);
  }

  /**
   * Prints the summary and writes {@code --json} and {@code --report}, where asked.
   *
   * @return the exit status: 1 if a check failed, or under {@code --strict} if a warning was
   *     printed
   */
  private int writeOutputs(SimulationConfig config, SimulationResult result, PrintWriter out)
      throws IOException {
    RunWarnings warnings = RunWarnings.of(config, result);
    boolean passed = result.passed() && (warnings.none() || !strict);
    String summary = SimulationSummary.of(config, result, warnings, strict);
    out.print(summary);
    if (capacity != null) {
      out.println("capacity  " + capacity.line());
    }
    for (String note : notes) {
      out.println("note      " + note);
    }
    out.flush();
    if (json != null) {
      TtftModel.Estimate ttft = TtftModel.DEFAULT.estimate(result, config.pageSize());
      Files.writeString(
          json,
          SimulationJson.of(result, ttft, warnings, passed, config, capacity) + "\n",
          StandardCharsets.UTF_8);
    }
    if (report != null) {
      Files.writeString(
          report,
          SimulationReport.html(config, summary, result, TtftModel.DEFAULT),
          StandardCharsets.UTF_8);
      out.println("report    " + report);
    }
    out.flush();
    return passed ? 0 : KvTierCli.EXIT_FAILURE;
  }

  /**
   * One rank of a run whose ranks are processes: runs it, then rank 0 prints the summary and
   * writes the JSON; every rank prints its line of the final digest check.
   */
  private int callRank(SimulationConfig config, PrintWriter out) throws IOException {
    CollectiveProvider provider = Providers.named(CollectiveProvider.class, config.collective());
    Availability availability = provider.availability();
    if (!availability.available()) {
      throw new UnusableInputException(
          "--collective " + config.collective() + " is unavailable here: " + availability.reason());
    }
    String name = group != null ? group : "kvtier-simulate-" + config.seed();
    SimulationResult result;
    try {
      result = MultiRankSimulator.runRank(config, placement.rank(), name);
    } catch (IllegalArgumentException e) {
      throw new UnusableInputException(e.getMessage(), e);
    }
    int status = result.passed() ? 0 : KvTierCli.EXIT_FAILURE;
    if (placement.rank() == 0) {
      status = writeOutputs(config, result, out);
    }
    out.println(rankLine(placement.rank(), config, result));
    out.flush();
    return status;
  }

  /**
   * The one line every rank of a multi-process run prints; {@code scripts/simulate-ranks.sh}
   * compares the digests of these lines.
   */
  static String rankLine(int rank, SimulationConfig config, SimulationResult result) {
    return String.format(
        Locale.ROOT,
        "rank %d of %d (%s): final replica digest %016x, equal on every rank: %s; %s",
        rank,
        config.ranks(),
        config.collective(),
        result.replicaDigest(),
        SimulationSummary.stoppedEarly(result)
            ? "not compared (the run stopped)"
            : result.replicaDigestsEqual() ? "yes" : "NO",
        result.passed() ? "PASS" : "FAIL: " + SimulationSummary.failure(result));
  }

  /** Where this process runs: the world size and, with one rank per process, its rank. */
  record Placement(int ranks, int rank) {
    /** Validates the fields. */
    Placement {
      if (rank < -1 || rank >= ranks) {
        throw new IllegalArgumentException(
            "--rank=" + rank + " must be in [0, ranks=" + ranks + ")");
      }
    }
  }

  /**
   * Decides the world size and this process's rank from the options and, under mpirun, from
   * the variables Open MPI's launcher sets ({@code OMPI_COMM_WORLD_SIZE}, {@code
   * OMPI_COMM_WORLD_RANK}, or {@code PMIX_RANK}).
   *
   * @param collective the collective's name
   * @param ranks {@code --ranks}
   * @param ranksGiven whether {@code --ranks} was on the command line
   * @param rank {@code --rank}, null if absent
   * @param environment the process environment
   * @return the placement; rank -1 for the local collective (every rank a thread)
   * @throws IllegalArgumentException naming the option, the value and the fix
   */
  static Placement place(
      String collective,
      int ranks,
      boolean ranksGiven,
      Integer rank,
      Map<String, String> environment) {
    if (collective.equals(SimulationConfig.LOCAL_COLLECTIVE)) {
      if (rank != null) {
        throw new IllegalArgumentException(
            "--rank="
                + rank
                + " is for one rank per process"
                + " (--collective mpi or hazelcast); with --collective local every rank is a thread"
                + " of this process: drop --rank");
      }
      return new Placement(ranks, -1);
    }
    if (collective.equals("mpi")) {
      OptionalInt mpiSize = number(environment, "OMPI_COMM_WORLD_SIZE");
      OptionalInt mpiRank = number(environment, "OMPI_COMM_WORLD_RANK");
      if (mpiRank.isEmpty()) {
        mpiRank = number(environment, "PMIX_RANK");
      }
      if (mpiSize.isPresent()) {
        if (ranksGiven && ranks != mpiSize.getAsInt()) {
          throw new IllegalArgumentException(
              "--ranks="
                  + ranks
                  + " contradicts mpirun, which"
                  + " started "
                  + mpiSize.getAsInt()
                  + " ranks: drop --ranks (it is taken from"
                  + " mpirun) or start mpirun -np "
                  + ranks);
        }
        ranks = mpiSize.getAsInt();
      }
      if (mpiRank.isPresent()) {
        if (rank != null && rank != mpiRank.getAsInt()) {
          throw new IllegalArgumentException(
              "--rank="
                  + rank
                  + " contradicts mpirun, which"
                  + " made this process rank "
                  + mpiRank.getAsInt()
                  + ": drop --rank");
        }
        rank = mpiRank.getAsInt();
      }
      if (rank == null) {
        if (ranks != 1) {
          throw new IllegalArgumentException(
              "--collective mpi: this process was not started"
                  + " by mpirun, so it is a single rank, but --ranks="
                  + ranks
                  + ": start it with"
                  + " mpirun -np "
                  + ranks
                  + " bin/kvtier simulate --collective mpi ..., or give"
                  + " --ranks 1");
        }
        rank = 0;
      }
    } else if (rank == null) {
      throw new IllegalArgumentException(
          "--collective "
              + collective
              + " runs one rank per"
              + " process: give each process its --rank, 0 to "
              + (ranks - 1)
              + " (scripts/simulate-ranks.sh starts them)");
    }
    if (rank < 0 || rank >= ranks) {
      throw new IllegalArgumentException(
          "--rank="
              + rank
              + " must be in [0, ranks="
              + ranks
              + "): give every process of the"
              + " group a different rank below --ranks");
    }
    return new Placement(ranks, rank);
  }

  private static OptionalInt number(Map<String, String> environment, String name) {
    String value = environment.get(name);
    if (value == null || value.isBlank()) {
      return OptionalInt.empty();
    }
    try {
      return OptionalInt.of(Integer.parseInt(value.strip()));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "the environment variable "
              + name
              + "='"
              + value
              + "' is not a number; mpirun sets"
              + " it: start the ranks with mpirun",
          e);
    }
  }

  private SimulationConfig config() {
    try {
      checkOptions();
      placement =
          place(
              collective,
              ranks,
              spec.commandLine().getParseResult().hasMatchedOption("--ranks"),
              rank,
              System.getenv());
      if (!collective.equals(SimulationConfig.LOCAL_COLLECTIVE)) {
        if (benchmark) {
          throw new IllegalArgumentException(
              "--benchmark runs every rank count as threads of"
                  + " this process: use it with --collective local");
        }
        // Named before anything starts, so that a typo lists the collectives on the path.
        Providers.named(CollectiveProvider.class, collective);
      }
      capacity = byteCapacity(placement.ranks());
      int rankPages = capacity == null ? devicePages : capacity.devicePages();
      SimulationConfigBuilder builder =
          SimulationConfig.builder()
              .ranks(placement.ranks())
              .collective(collective)
              .collectiveProperties(collectiveProperties)
              .watchdog(Duration.ofSeconds(watchdogSeconds))
              .device(device)
              .workload(CliWorkloads.withDefaults(workload))
              .requests(requests)
              .pageSize(pageSize)
              .devicePages(rankPages)
              .hostRatio(hostRatio)
              .writePolicy(OptionCheck.parse("--write-policy", writePolicy, WritePolicy::parse))
              .eviction(OptionCheck.parse("--eviction", eviction, EvictionPolicy::parse))
              .ackDelay(OptionCheck.parse("--ack-delay", ackDelay, AckDelay::parse))
              .seed(seed)
              .ticks(ticks)
              .digestInterval(digestInterval)
              .fullCheckInterval(fullCheckInterval)
              .abortProbability(abortProbability)
              .failureProbability(failureProbability)
              .flipProbability(flipProbability)
              .onLoadFailure(LoadFailurePolicy.parse(onLoadFailure, "--on-load-failure"))
              .cacheChunks(!insertAtFinish)
              .chunkTokens(chunk)
              .arrivalsPerTick(arrivalsPerTick)
              .maxRunning(maxRunning)
              .maxPrefillTokens(
                  maxPrefillTokens == null ? RankEngineConfig.NO_PREFILL_BUDGET : maxPrefillTokens)
              .l3(l3Simulation())
              .rankFailure(rankFailure(placement.ranks()));
      HybridOptions.Mix mix =
          HybridOptions.mix(
              layerMix, snapshotInterval, swaCache, SimulationConfig.kvLayout(pageSize));
      if (mix.snapshotSlots() >= rankPages) {
        throw new IllegalArgumentException(
            "--device-pages="
                + rankPages
                + " is too small for --layer-mix "
                + mix.text()
                + (mix.windowedSwa()
                    ? " with --swa-cache windows: a snapshot of its SWA windows"
                        + (mix.hasRecurrent() ? " and recurrent states" : "")
                    : ": a recurrent-state snapshot")
                + " takes "
                + mix.snapshotSlots()
                + " device page slot(s) beside the KV pages; give --device-pages "
                + (mix.snapshotSlots() + 1)
                + " or more");
      }
      mix.layers().ifPresent(builder::layerMix);
      SimulationConfig built =
          builder
              .snapshots(mix.snapshotSlots(), mix.snapshotIntervalPages())
              .windowedSwa(mix.windowedSwa())
              .build();
      SimulateInputs.checkProviders(device, l3);
      notes.clear();
      for (String note :
          new String[] {
            SimulateInputs.checkOutput("--json", json),
            SimulateInputs.checkOutput("--report", report)
          }) {
        if (note != null) {
          notes.add(note);
        }
      }
      return built;
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          spec.commandLine(),
          e.getMessage(),
          e,
          null,
          Optional.ofNullable(e.getMessage()).orElse(""));
    }
  }

  /**
   * Checks every numeric option against what the configuration accepts, in the option's own
   * name, before the builder (whose messages name its fields) sees it.
   */
  private void checkOptions() {
    OptionCheck.between("--ranks", ranks, 1, SimulationConfig.MAX_RANKS, "ranks in the run");
    OptionCheck.atLeast("--requests", requests, 0, "the most requests taken, 0 for all");
    OptionCheck.atLeast("--page-size", pageSize, 1, "tokens per page");
    OptionCheck.atLeast("--device-pages", devicePages, 1, "device pool pages per rank");
    if (!(hostRatio == 0 || hostRatio > 1) || Double.isInfinite(hostRatio)) {
      throw new IllegalArgumentException(
          "--host-ratio="
              + hostRatio
              + " is out of range: give a ratio above 1, or 0 for no host tier (host pool size"
              + " relative to the device pool)");
    }
    OptionCheck.atLeast("--ticks", ticks, 1, "ticks during which requests arrive");
    OptionCheck.atLeast(
        "--digest-interval", digestInterval, 0, "ticks between digest checks, 0 for none");
    OptionCheck.atLeast(
        "--full-check-interval", fullCheckInterval, 1, "ticks between full invariant checks");
    OptionCheck.probability("--abort-probability", abortProbability, "chance per tick");
    OptionCheck.probability("--failure-probability", failureProbability, "chance per copy batch");
    OptionCheck.probability(
        "--flip-probability", flipProbability, "chance per host-to-device copy batch");
    OptionCheck.atLeast("--chunk", chunk, 1, "prompt tokens prefilled per tick");
    OptionCheck.atLeast("--max-running", maxRunning, 1, "requests running at once");
    OptionCheck.atLeast(
        "--arrivals-per-tick", arrivalsPerTick, 1, "requests that arrive in one tick");
    if (maxPrefillTokens != null) {
      OptionCheck.atLeast(
          "--max-prefill-tokens", maxPrefillTokens, 1, "prompt tokens prefilled per tick");
    }
    OptionCheck.atLeast("--watchdog", watchdogSeconds, 1, "seconds one collective may wait");
    OptionCheck.atLeast("--l3-mib", l3Mib, 1, "L3 store capacity per rank in MiB");
    OptionCheck.atLeast(
        "--l3-prefetch-threshold", l3Threshold, 1, "fewest tokens worth prefetching");
    OptionCheck.atLeast("--l3-step-us", l3StepMicros, 0, "virtual microseconds per store step");
    OptionCheck.finiteAtLeast("--l3-skew", l3Skew, 0, "how much slower each further rank is");
    OptionCheck.atLeast("--l3-timeout-ms", l3TimeoutMs, 1, "base of the prefetch timeout");
    OptionCheck.probability("--l3-faults", l3Faults, "chance per page");
    OptionCheck.probability("--l3-flip-probability", l3FlipProbability, "chance per page read");
    if (l3FlipProbability > 0 && l3.equals("none")) {
      throw new IllegalArgumentException(
          "--l3-flip-probability flips bits of stored L3 pages, but --l3 is none: give --l3"
              + " memory or --l3 file");
    }
    if (hostRatio == 0 && !l3.equals("none")) {
      throw new IllegalArgumentException(
          "--l3 "
              + l3
              + " needs a host tier, which its pages pass through, but --host-ratio is 0: give"
              + " --host-ratio above 1");
    }
    if (hostRatio == 0 && writePolicy.equals("write_back")) {
      throw new IllegalArgumentException(
          "--write-policy write_back needs a host tier, but --host-ratio is 0: give --host-ratio"
              + " above 1");
    }
    if (l3Dir != null && !l3.equals("file")) {
      throw new IllegalArgumentException(
          "--l3-dir is the file store's directory, but --l3 is " + l3 + ": give --l3 file");
    }
  }

  /**
   * The device pages of {@code --device-bytes} with {@code --kv-layout} over the run's ranks, split
   * as {@code --parallel} says; null without {@code --kv-layout}. Every message names the option.
   */
  private ByteCapacity byteCapacity(int worldSize) {
    var parsed = spec.commandLine().getParseResult();
    if (kvLayout == null) {
      for (String option : List.of("--device-bytes", "--parallel")) {
        if (parsed.hasMatchedOption(option)) {
          throw new IllegalArgumentException(
              option
                  + " needs --kv-layout layers=N,kv-heads=N,head-dim=N,dtype-bytes=N: without it"
                  + " the capacities are --device-pages per rank, pages of --page-size tokens on"
                  + " every rank, the same for tp and cp");
        }
      }
      return null;
    }
    if (deviceBytes != null && parsed.hasMatchedOption("--device-pages")) {
      throw new IllegalArgumentException(
          "--device-pages and --device-bytes both give the device pool: give one");
    }
    if (deviceBytes != null && benchmark) {
      throw new IllegalArgumentException(
          "--device-bytes gives the pages of one rank count, and --benchmark runs 1, 2, 4 and 8"
              + " ranks with the same pages: give --device-pages");
    }
    Parallelism split =
        OptionCheck.parse(
            "--parallel", parallel == null ? "tp" : parallel, v -> Parallelism.parse(v, 1));
    RankKvShare share = new RankKvShare(RankKvShare.parseLayout(kvLayout), worldSize, split);
    share.checkPageSize(pageSize);
    long pageBytes = Math.multiplyExact(share.bytesPerToken(), (long) pageSize);
    int pages = devicePages;
    if (deviceBytes != null) {
      long bytes = ConfigValues.parseBytes("--device-bytes", deviceBytes);
      long fit = bytes / pageBytes;
      if (fit < 1) {
        throw new IllegalArgumentException(
            "--device-bytes="
                + deviceBytes
                + " holds no page: a page of "
                + pageSize
                + " tokens takes "
                + pageBytes
                + " bytes on each of "
                + worldSize
                + " "
                + split.configName()
                + " rank(s) of --kv-layout "
                + kvLayout
                + ": give at least "
                + pageBytes);
      }
      if (fit > MAX_BYTE_PAGES) {
        throw new IllegalArgumentException(
            "--device-bytes="
                + deviceBytes
                + " holds "
                + fit
                + " pages of "
                + pageSize
                + " tokens per rank, more than the simulator's "
                + MAX_BYTE_PAGES
                + ": give a larger --page-size or fewer bytes");
      }
      pages = (int) fit;
    }
    return new ByteCapacity(kvLayout, share, pageSize, pages, deviceBytes);
  }

  /** The most device pages per rank that --device-bytes may give (a pool of 4 M pages). */
  static final long MAX_BYTE_PAGES = 1L << 22;

  /**
   * What {@code --kv-layout} made of the device pool: the pages per rank and their bytes.
   *
   * @param kvLayout the option's text
   * @param share one rank's share of each token's KV
   * @param pageSize tokens per page
   * @param devicePages device pages per rank
   * @param deviceBytes {@code --device-bytes} as given, null if the pages came from {@code
   *     --device-pages}
   */
  record ByteCapacity(
      String kvLayout, RankKvShare share, int pageSize, int devicePages, String deviceBytes) {

    /** The bytes of the device pages on one rank. */
    long deviceBytesPerRank() {
      return share.bytesPerToken() * pageSize * devicePages;
    }

    /** The summary's line. */
    String line() {
      return String.format(
          Locale.ROOT,
          "%,d KV bytes per token on each of %d %s rank(s) (%,d on one): %s%,d device pages of"
              + " %d tokens per rank (%,d bytes), %,d tokens in the group's device pools",
          share.bytesPerToken(),
          share.ranks(),
          share.parallelism().configName(),
          share.modelBytesPerToken(),
          deviceBytes == null ? "" : "--device-bytes " + deviceBytes + " holds ",
          devicePages,
          pageSize,
          deviceBytesPerRank(),
          (long) devicePages * pageSize);
    }
  }

  /**
   * The injected failure of {@code --fail-*}, checked against the run: every message names the
   * option, its value and what to give instead.
   */
  private RankFailureInjection rankFailure(int worldSize) {
    var parsed = spec.commandLine().getParseResult();
    if (failRank == null && failTick == null) {
      for (String option : List.of("--fail-step", "--fail-kind")) {
        if (parsed.hasMatchedOption(option)) {
          throw new IllegalArgumentException(
              option
                  + " needs --fail-rank R and --fail-tick T: it says how rank R fails, and no"
                  + " rank is made to fail without them");
        }
      }
      return RankFailureInjection.NONE;
    }
    if (failRank == null) {
      throw new IllegalArgumentException(
          "--fail-tick=" + failTick + " needs --fail-rank R: the rank that fails at that tick");
    }
    if (failTick == null) {
      throw new IllegalArgumentException(
          "--fail-rank=" + failRank + " needs --fail-tick T: the tick at which that rank fails");
    }
    if (failRank < 0 || failRank >= worldSize) {
      throw new IllegalArgumentException(
          "--fail-rank="
              + failRank
              + " must be in [0, "
              + worldSize
              + "): the rank that fails is one of the run's "
              + worldSize
              + " ranks");
    }
    if (failTick < 0) {
      throw new IllegalArgumentException(
          "--fail-tick=" + failTick + " must be >= 0: ticks count from 0");
    }
    if (benchmark) {
      throw new IllegalArgumentException(
          "--fail-rank makes a run fail, and --benchmark measures runs that pass: use one or"
              + " the other");
    }
    TickStep step;
    try {
      step = RankFailureInjection.parseStep(failStep);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "--fail-step="
              + failStep
              + " is not a step: give one of receive, sync, admit, forward, finish, check",
          e);
    }
    RankFailureInjection.Kind kind;
    try {
      kind = RankFailureInjection.Kind.parse(failKind);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "--fail-kind=" + failKind + " is not a failure kind: give exception or error", e);
    }
    if (step == TickStep.CHECK && digestInterval == 0) {
      throw new IllegalArgumentException(
          "--fail-step check fails in the engine's digest check, which --digest-interval 0"
              + " turns off: give --digest-interval 1 or another --fail-step");
    }
    if (step == TickStep.SYNC && hostRatio == 0) {
      throw new IllegalArgumentException(
          "--fail-step sync fails in the sync reduction, which runs only while copies are"
              + " outstanding, and --host-ratio 0 makes none: give a host tier or another"
              + " --fail-step");
    }
    return RankFailureInjection.of(failRank, failTick, step, kind);
  }

  private L3Simulation l3Simulation() {
    L3Simulation s =
        L3Simulation.NONE
            .withStore(l3)
            .withCapacityBytes(l3Mib << 20)
            .withPrefetch(
                OptionCheck.parse("--l3-prefetch-policy", l3Policy, L3PrefetchPolicy::parse),
                l3Threshold)
            .withTiming(l3StepMicros, l3Skew, java.time.Duration.ofMillis(l3TimeoutMs), l3Faults)
            .withFlipProbability(l3FlipProbability);
    return l3Dir == null ? s : s.withDirectory(l3Dir);
  }
}
