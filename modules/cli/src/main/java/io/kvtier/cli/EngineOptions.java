package io.kvtier.cli;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.core.rank.LoadFailurePolicy;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.serving.EngineSettings;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngines;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;
import picocli.CommandLine.Option;

/**
 * The options of the engine that serves (a picocli mixin of {@code kvtier serve}): the rank
 * group (how many ranks, joined by which collective, and which rank this process is), continuous
 * batching, and the pool sizes. {@link #openOrFollow} opens the group the options describe.
 */
public final class EngineOptions {

  @Option(
      names = "--ranks",
      description =
          "Ranks of the group, each holding its share of the model's KV heads (--parallel tp:"
              + " a divisor of the heads, 1, 2 or 4 for the tiny transformer) or of every"
              + " sequence's positions (--parallel cp); sets kvtier.ranks (default: kvtier.ranks"
              + " of the config, else 1). Under mpirun it is taken from mpirun.")
  Integer ranks;

  @Option(
      names = "--parallel",
      paramLabel = "tp|cp",
      description =
          "How the ranks split the model (sets kvtier.parallel; default: the config's, else tp):"
              + " tp, each rank a share of the KV heads and feed-forward rows; cp (GGUF models),"
              + " each rank the whole weights and the KV of its share of every sequence's"
              + " positions, 1/ranks of the KV bytes per token (docs/MODELS.md).")
  String parallel;

  @Option(
      names = "--cp-interleave",
      paramLabel = "N",
      description =
          "Under --parallel cp, the consecutive positions a rank takes per turn: rank"
              + " (p / N) mod ranks owns position p; ranks x N must divide kvtier.page-size (sets"
              + " kvtier.cp-interleave; default: the config's, else 1).")
  Integer cpInterleave;

  @Option(
      names = "--collective",
      paramLabel = "NAME",
      description =
          "What joins the ranks (sets kvtier.collective): local (every rank a thread of this"
              + " process; the default), or"
              + " one rank per process: mpi (mpirun -np R kvtier serve --collective mpi) or"
              + " hazelcast (start R processes, each with its --rank). Rank 0 serves HTTP; the"
              + " others follow its broadcasts until it stops.")
  String collective = "local";

  @Option(
      names = "--rank",
      description =
          "This process's rank with one rank per process when the launcher does not assign"
              + " it (hazelcast); not with local.")
  Integer rank;

  @Option(
      names = "--collective-property",
      paramLabel = "KEY=VALUE",
      description =
          "A setting of the collective provider, as a full key, repeatable (for example"
              + " hazelcast.members=10.0.0.1:5701,10.0.0.2:5701).")
  Map<String, String> collectiveProperties = new LinkedHashMap<>();

  @Option(
      names = "--group",
      description =
          "The rank group's name, equal on every rank; two servers on one network need"
              + " different names (default: ${DEFAULT-VALUE}).")
  String group = EngineSettings.DEFAULTS.group();

  @Option(
      names = "--max-running",
      description =
          "Requests that advance in one tick (continuous batching): a prefill chunk or"
              + " one decode token each (default: ${DEFAULT-VALUE}).")
  int maxRunning = EngineSettings.DEFAULTS.maxRunning();

  @Option(
      names = "--chunk",
      description =
          "Prompt tokens one request prefills per tick (chunked prefill; default:"
              + " ${DEFAULT-VALUE}).")
  int chunk = EngineSettings.DEFAULTS.chunkTokens();

  @Option(
      names = "--max-prefill-tokens",
      paramLabel = "TOKENS",
      description =
          "Prompt tokens all running requests together prefill per tick, taken in admission"
              + " order, each at most --chunk; a smaller budget keeps long prompts from holding"
              + " up every decode in their tick (default: no budget, each request its --chunk).")
  Integer maxPrefillTokens;

  @Option(
      names = "--no-prefix-cache",
      description =
          "Never reuse a cached prefix: each request gets a cache namespace of its own"
              + " (the baseline to measure the cache against).")
  boolean noPrefixCache;

  @Option(
      names = "--verify-restores",
      paramLabel = "checksum|recompute",
      description =
          "How a prefix loaded back from the host tier is checked: checksum (the CRC32C every"
              + " host page carries; default) or recompute (also recompute the prefix and"
              + " compare its K/V bit for bit, a debug check that costs what the hit saved).")
  String verifyRestores = "checksum";

  @Option(
      names = "--on-load-failure",
      paramLabel = "recompute|fail",
      description =
          "What a request whose load-back from the host tier failed (a copy error, or a page"
              + " whose checksum no longer matches) does: recompute (the client only waits"
              + " longer; default) or fail (503 load_failed).")
  String onLoadFailure = "recompute";

  @Option(
      names = "--device-pages",
      description = "Device pool pages per rank (sets kvtier.device-pages).")
  Integer devicePages;

  @Option(
      names = "--host-pages",
      description = "Host pool pages per rank (sets kvtier.host-pages).")
  Integer hostPages;

  /**
   * Checks {@code --parallel} and {@code --cp-interleave} as given on the command line.
   *
   * @throws IllegalArgumentException naming the option and the values it takes
   */
  void checkParallel() {
    if (parallel != null) {
      Parallelism.parse(parallel, cpInterleave == null ? 1 : cpInterleave);
    } else if (cpInterleave != null && cpInterleave < 1) {
      Parallelism.cp(cpInterleave);
    }
  }

  /**
   * Sets the options that are config keys ({@code kvtier.ranks}, {@code kvtier.collective}, pool
   * sizes, collective properties) on a builder, over what the file and system properties said.
   * Under mpirun the world size is mpirun's.
   *
   * @param builder the builder of the serve config
   * @param environment the process environment (mpirun's variables)
   */
  public void applyTo(KvTierConfigBuilder builder, Map<String, String> environment) {
    builder.collective(collective.strip());
    if (ranks != null) {
      builder.ranks(ranks);
    }
    if (parallel != null) {
      builder.set(KvTierKeys.PARALLEL, parallel.strip());
    }
    if (cpInterleave != null) {
      builder.set(KvTierKeys.CP_INTERLEAVE, Integer.toString(cpInterleave));
    }
    if (devicePages != null) {
      builder.devicePages(devicePages);
    }
    if (hostPages != null) {
      builder.hostPages(hostPages);
    }
    collectiveProperties.forEach(builder::set);
    String mpiSize = environment.get("OMPI_COMM_WORLD_SIZE");
    if (collective.strip().equals("mpi")
        && ranks == null
        && mpiSize != null
        && !mpiSize.isBlank()) {
      builder.set(KvTierKeys.RANKS, mpiSize.strip());
    }
  }

  /**
   * The engine settings these options give for a config, with this process's rank.
   *
   * @param config the serve config (after {@link #applyTo})
   * @param queueCapacity the most requests that may wait for admission
   * @param environment the process environment
   * @return the settings
   * @throws IllegalArgumentException if the rank options contradict each other or the launcher
   */
  public EngineSettings settings(
      KvTierConfig config, int queueCapacity, Map<String, String> environment) {
    SimulateCommand.Placement placement =
        SimulateCommand.place(
            config.provider(ProviderKind.COLLECTIVE),
            config.ranks(),
            ranks != null,
            rank,
            environment);
    return EngineSettings.DEFAULTS
        .withRank(placement.rank())
        .withBatching(maxRunning, chunk)
        .withMaxPrefillTokens(maxPrefillTokens())
        .withQueueCapacity(queueCapacity)
        .withGroup(group)
        .withPrefixCaching(!noPrefixCache)
        .withVerifyByRecompute(verifyByRecompute())
        .withOnLoadFailure(onLoadFailure());
  }

  /**
   * The {@code --max-prefill-tokens} budget.
   *
   * @return the tokens, or {@link RankEngineConfig#NO_PREFILL_BUDGET} when not given
   * @throws IllegalArgumentException if it is below 1, naming the option
   */
  int maxPrefillTokens() {
    if (maxPrefillTokens == null) {
      return RankEngineConfig.NO_PREFILL_BUDGET;
    }
    if (maxPrefillTokens < 1) {
      throw new IllegalArgumentException(
          "--max-prefill-tokens="
              + maxPrefillTokens
              + " must be at least 1 (leave it out for no budget)");
    }
    return maxPrefillTokens;
  }

  /**
   * The {@code --on-load-failure} policy.
   *
   * @throws IllegalArgumentException naming the option if its value is neither policy
   */
  LoadFailurePolicy onLoadFailure() {
    return LoadFailurePolicy.parse(onLoadFailure, "--on-load-failure");
  }

  /**
   * Whether {@code --verify-restores} asks for the recompute check.
   *
   * @throws IllegalArgumentException naming the option if its value is neither check
   */
  boolean verifyByRecompute() {
    return switch (verifyRestores.strip()) {
      case "checksum" -> false;
      case "recompute" -> true;
      default ->
          throw new IllegalArgumentException(
              "--verify-restores "
                  + verifyRestores
                  + " is not a check kvtier knows: use checksum or recompute");
    };
  }

  /**
   * Opens the rank group: on the serving rank (rank 0, or every rank as threads) the engine to
   * serve; on any other rank, runs that rank until rank 0 closes the group, then returns empty.
   *
   * @param model the model
   * @param config the serve config, the model's KV layout (after {@link #applyTo})
   * @param queueCapacity the most requests that may wait for admission before a 429
   * @param metrics where the serving rank's backends report transfers
   * @param wrapCollective applied to each rank's collective handle (to time its calls)
   * @return the engine on the serving rank; empty once a follower rank's group has ended
   * @throws io.kvtier.core.rank.RankGroupFailedException on a follower whose group failed
   */
  public Optional<GenerationEngine> openOrFollow(
      ServingModel model,
      KvTierConfig config,
      int queueCapacity,
      BackendMetrics metrics,
      UnaryOperator<Collective> wrapCollective) {
    EngineSettings settings = settings(config, queueCapacity, System.getenv());
    if (!settings.isServingRank()) {
      GenerationEngines.follow(model, config, settings, metrics, wrapCollective);
      return Optional.empty();
    }
    return Optional.of(GenerationEngines.open(model, config, settings, metrics, wrapCollective));
  }
}
