package io.kvtier.cli;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.metrics.KvTierMeters;
import io.kvtier.metrics.MicrometerBackendMetrics;
import io.kvtier.metrics.TimedCollective;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyModelRunner;
import io.kvtier.server.ApiException;
import io.kvtier.server.CompletionServer;
import io.kvtier.server.TransferSettings;
import io.kvtier.serving.EngineSettings;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.spi.KvLayout;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier serve}: an HTTP server embedding kvtier with a model (the tiny transformer, or a
 * GGUF file's), until the process is stopped (Ctrl-C, SIGTERM), then a graceful shutdown.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Serves a model over OpenAI's HTTP API, with kvtier caching its KV: the tiny transformer"
          + " (--model tiny, the default) or a GGUF file's llama, qwen2 or Gemma model (--model"
          + " FILE.gguf, docs/MODELS.md).",
      "  POST /v1/completions, POST /v1/chat/completions (\"stream\": true for server-sent"
          + " events), GET /v1/models",
      "  GET /metrics (Prometheus text), GET or HEAD /health",
      "Decoding is greedy. See docs/SERVE.md.",
      "The model fixes kvtier.layers, kvtier.kv-heads, kvtier.head-dim, kvtier.dtype-bytes and"
          + " kvtier.vocab-size: for the tiny transformer the layers of --model-layers (2 by"
          + " default), 4, 16, 4 and 512; --ranks splits its KV heads.",
      "Exit status: 0 after a graceful stop, 1 if the rank group failed (the cause on stderr),"
          + " 2 for an option or address that cannot be used."
    })
final class ServeCommand implements Callable<Integer> {
  /** Exit status of an option, address or environment that cannot be used. */
  static final int EXIT_USAGE = 2;

  /** The prefix of the file store's directory that serve creates and deletes. */
  static final String TEMPORARY_STORE_PREFIX = "kvtier-serve-l3-";

  @Spec private CommandSpec spec;

  @Mixin private EngineOptions engineOptions = new EngineOptions();

  /** One rank's pools' KV layout, known once the config is checked. */
  private KvLayout rankLayout;

  @Option(
      names = "--port",
      defaultValue = "8080",
      description = "TCP port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  private int port;

  @Option(
      names = "--bind",
      defaultValue = "127.0.0.1",
      description = "Address to listen on (default: ${DEFAULT-VALUE}, loopback only).")
  private String bind;

  @Option(
      names = "--config",
      paramLabel = "FILE",
      description = "A kvtier .properties file (pools, policies, sim.* settings).")
  private Path config;

  @Option(
      names = "--queue",
      defaultValue = "64",
      description =
          "Requests that may wait for the engine before a 429" + " (default: ${DEFAULT-VALUE}).")
  private int queue;

  @Option(
      names = "--api-key",
      paramLabel = "KEY",
      defaultValue = "${env:KVTIER_API_KEY}",
      description =
          "Every /v1 request must send Authorization: Bearer KEY (default: the KVTIER_API_KEY"
              + " environment variable, else no key). /health and /metrics stay open.")
  private String apiKey;

  @Option(
      names = "--api-key-file",
      paramLabel = "FILE",
      description =
          "Tenants: one KEY TENANT per line (# comments). Every /v1 request must send one of the"
              + " keys, and each tenant's prefixes are cached apart from every other's"
              + " (docs/SERVE.md, Tenants). Not with --api-key.")
  private Path apiKeyFile;

  @Option(
      names = "--namespace-secret-file",
      paramLabel = "FILE",
      description =
          "The secret (16 bytes or more) that keys the cache namespaces of tenants and"
              + " cache_salt values. Give every replica sharing an L3 store, and a router in front,"
              + " the same file; without it a secret is made at start, good until the server"
              + " stops.")
  private Path namespaceSecretFile;

  @Option(
      names = "--shared-cache-salt",
      paramLabel = "SALT",
      description =
          "A cache_salt that puts a request in the shared namespace 0, whatever its tenant: for"
              + " prefixes all tenants may share on purpose (a public system prompt).")
  private String sharedCacheSalt;

  @Option(
      names = "--model",
      paramLabel = "MODEL",
      defaultValue = "tiny",
      description =
          "tiny (the tiny transformer, random weights; the default) or the path of a GGUF file"
              + " of a llama, qwen2, gemma2 or gemma3 model (docs/MODELS.md).")
  private String modelOption;

  @Option(
      names = "--max-context",
      paramLabel = "TOKENS",
      description =
          "The most tokens (prompt and output) of one sequence (default: the model's context:"
              + " a GGUF file's context length, 256 for the tiny transformer).")
  private Integer maxContext;

  @Option(
      names = "--speculative",
      paramLabel = "DRAFT",
      description =
          "Speculative decoding with a draft of a GGUF model (docs/MODELS.md): draft-layer (the"
              + " file's layer after its last, blk.N.*, its K/V in every tier),"
              + " draft-layer:copy-last (a copy of the last layer: always right, a test of the"
              + " tiers) or model:FILE.gguf (a small model of the same vocabulary, its K/V"
              + " outside the tiers). Output is the same token for token.")
  private String speculative;

  @Option(
      names = "--num-speculative-tokens",
      paramLabel = "K",
      description = "Tokens the draft proposes per decode step, 1 to 64 (default: 4).")
  private Integer speculativeTokens;

  @Option(
      names = "--kv-type",
      paramLabel = "TYPE",
      description =
          "How the pages of a GGUF model hold its K/V: f32 (the default) or f16 (half the bytes"
              + " per token, so every tier holds twice the tokens; rounded once when written,"
              + " as llama.cpp's default cache does; docs/MODELS.md).")
  private String kvType;

  @Option(
      names = "--served-model-name",
      paramLabel = "NAME",
      description =
          "The model id of /v1/models, which requests name (default: the model's name: "
              + ServedModel.TINY_NAME
              + " for the tiny transformer, a GGUF file's general.name).")
  private String modelName;

  @Option(
      names = "--read-timeout",
      paramLabel = "SECONDS",
      defaultValue = "30",
      description =
          "How long a connection may stay silent while a body is read or an answer written"
              + " (default: ${DEFAULT-VALUE}).")
  private int readTimeoutSeconds;

  @Option(
      names = "--request-timeout",
      paramLabel = "SECONDS",
      defaultValue = "120",
      description =
          "How long a request may wait in the queue and run before it is cancelled and answered"
              + " 503 timeout (default: ${DEFAULT-VALUE}); raise it for long prompts on a slow"
              + " model.")
  private int requestTimeoutSeconds;

  @Option(
      names = "--model-seed",
      defaultValue = "42",
      description = "Seed of the tiny transformer's weights (default: ${DEFAULT-VALUE}).")
  private long modelSeed;

  @Option(
      names = "--model-layers",
      paramLabel = "MIX",
      defaultValue = "full,full",
      description =
          "The kind of each layer of the tiny transformer, comma-separated: full, swa:W (sliding"
              + " window of W tokens) or recurrent, kind*N for N in a row, e.g."
              + " full,swa:64*2,recurrent (default: ${DEFAULT-VALUE}). With a recurrent layer a"
              + " prompt resumes at the deepest recurrent-state snapshot of its match:"
              + " cached_tokens counts that part (docs/HYBRID.md).")
  private String modelLayers;

  @Option(
      names = "--swa-cache",
      paramLabel = "MODE",
      defaultValue = "pages",
      description =
          "Where the cache keeps the KV of the swa:W layers of --model-layers: pages (every"
              + " page, beside the full-attention KV; the default) or windows (only the last W-1"
              + " positions at each state snapshot: a page then holds the full-attention layers"
              + " alone, and a prompt resumes at the deepest snapshot of its match;"
              + " docs/HYBRID.md §4).")
  private String swaCache;

  @Option(
      names = "--snapshot-interval",
      paramLabel = "K",
      description =
          "Pages between two state snapshots of a request, besides the one at its end (sets"
              + " kvtier.snapshot-interval-pages; default: the config's, else 8). Only a"
              + " --model-layers with a recurrent layer, or an swa:W one with --swa-cache"
              + " windows, takes snapshots.")
  private Integer snapshotInterval;

  @Option(
      names = "--l3",
      paramLabel = "STORE",
      description =
          "L3 store under the host tier:"
              + " none, memory, file or hazelcast (sets kvtier.store; default: kvtier.store of the"
              + " config, else none).")
  private String l3;

  @Option(
      names = "--role",
      paramLabel = "ROLE",
      defaultValue = "both",
      description =
          "prefill, decode or both (default: ${DEFAULT-VALUE}). A prefill replica answers every"
              + " request with one token and a kv_transfer_params handle, once its prompt's pages"
              + " are in the L3 store; a decode replica takes the original request with that"
              + " handle and decodes from the published pages. Both roles need an L3 store the"
              + " replicas share: --l3 file --l3-dir DIR on one machine, --l3 hazelcast across"
              + " machines (docs/SERVE.md, Prefill and decode replicas).")
  private String role;

  @Option(
      names = "--replica-id",
      paramLabel = "ID",
      description =
          "How this replica's transfer handles name it (prefill_replica; default: BIND:PORT).")
  private String replicaId;

  @Option(
      names = "--l3-dir",
      paramLabel = "DIR",
      description =
          "Directory of the file store"
              + " (sets file.directory; default with --l3 file: a new temporary directory).")
  private Path l3Dir;

  @Option(
      names = "--l3-mib",
      description =
          "L3 store capacity in MiB (sets kvtier.l3-bytes;"
              + " default: kvtier.l3-bytes of the config, else 1024).")
  private Long l3Mib;

  @Option(
      names = "--l3-prefetch-policy",
      paramLabel = "POLICY",
      description =
          "best_effort,"
              + " wait_complete or timeout (sets kvtier.l3-prefetch-policy; default: timeout).")
  private String l3Policy;

  @Option(
      names = "--l3-prefetch-threshold",
      description =
          "Fewest tokens of an L3 hit worth"
              + " prefetching (sets kvtier.l3-prefetch-threshold; default: 256).")
  private Integer l3Threshold;

  private final CountDownLatch stop = new CountDownLatch(1);
  // The file store's directory this command created, deleted when the server stops.
  private Path createdStore;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile CompletionServer server;
  // The model served.
  private ServedModel served;

  // The model id of /v1/models: --served-model-name, else the model's name.
  private String servedName;

  // The replica's role in prefill/decode disaggregation, known once the config is checked.
  private TransferSettings transfers = TransferSettings.NONE;

  @Override
  public Integer call() throws IOException, InterruptedException {
    PrintWriter err = spec.commandLine().getErr();
    if (port < 0 || port > 65_535) {
      return usage(err, "--port=" + port + " must be between 0 and 65535 (0 picks a free port)");
    }
    if (queue < 1) {
      return usage(err, "--queue=" + queue + " must be at least 1");
    }
    try {
      engineOptions.verifyByRecompute();
      engineOptions.onLoadFailure();
      engineOptions.maxPrefillTokens();
    } catch (IllegalArgumentException e) {
      return usage(err, e.getMessage());
    }
    if (readTimeoutSeconds < 1) {
      return usage(err, "--read-timeout=" + readTimeoutSeconds + " must be at least 1 second");
    }
    if (requestTimeoutSeconds < 1) {
      return usage(
          err, "--request-timeout=" + requestTimeoutSeconds + " must be at least 1 second");
    }
    if (modelName != null && modelName.isBlank()) {
      return usage(err, "--served-model-name must not be blank");
    }
    TransferSettings.Role replicaRole;
    try {
      replicaRole = TransferSettings.Role.parse(role);
    } catch (IllegalArgumentException e) {
      return usage(err, e.getMessage());
    }
    if (replicaId != null && replicaId.isBlank()) {
      return usage(err, "--replica-id must not be blank");
    }
    Optional<String> key = Optional.ofNullable(apiKey).filter(k -> !k.isEmpty());
    Optional<ApiKeys> tenants = Optional.empty();
    if (apiKeyFile != null) {
      if (key.isPresent()) {
        return usage(
            err,
            "--api-key-file and --api-key (or KVTIER_API_KEY) both give keys: give the one key"
                + " in the file, or drop the file");
      }
      try {
        tenants = Optional.of(ApiKeys.read(apiKeyFile));
      } catch (IllegalArgumentException e) {
        return usage(err, "--api-key-file " + e.getMessage());
      }
    }
    if (sharedCacheSalt != null && sharedCacheSalt.isEmpty()) {
      return usage(err, "--shared-cache-salt is empty: give a salt, or drop the option");
    }
    Optional<String> shared = Optional.ofNullable(sharedCacheSalt);
    CacheNamespaces namespaces;
    try {
      namespaces =
          namespaceSecretFile == null
              ? CacheNamespaces.random(shared)
              : CacheNamespaces.of(CacheNamespaces.readSecret(namespaceSecretFile), shared);
    } catch (IllegalArgumentException e) {
      return usage(err, "--namespace-secret-file " + e.getMessage());
    }
    InetAddress address;
    try {
      address = InetAddress.getByName(bind);
    } catch (UnknownHostException e) {
      return usage(
          err,
          "--bind="
              + bind
              + " is not a known host name or address: give an address of this machine, such as"
              + " 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)");
    }
    boolean tiny = modelOption.strip().equals("tiny");
    if (!tiny) {
      for (String tinyOnly : List.of("--model-seed", "--model-layers", "--swa-cache")) {
        if (spec.commandLine().getParseResult().hasMatchedOption(tinyOnly)) {
          return usage(
              err,
              tinyOnly
                  + " is an option of the tiny transformer, but --model is "
                  + modelOption
                  + ", whose file fixes its weights and layers: drop "
                  + tinyOnly);
        }
      }
    }
    if (maxContext != null && maxContext < 1) {
      return usage(err, "--max-context=" + maxContext + " must be at least 1");
    }
    if (tiny && (speculative != null || speculativeTokens != null)) {
      return usage(
          err,
          (speculative != null ? "--speculative" : "--num-speculative-tokens")
              + " needs a GGUF model (--model FILE.gguf): the tiny transformer has no draft");
    }
    if (tiny && kvType != null) {
      return usage(
          err,
          "--kv-type needs a GGUF model (--model FILE.gguf): the tiny transformer's K/V is"
              + " kvtier.dtype-bytes of its config");
    }
    if (speculative == null && speculativeTokens != null) {
      return usage(
          err,
          "--num-speculative-tokens="
              + speculativeTokens
              + " without --speculative: give --speculative draft-layer too, or drop it");
    }
    try {
      engineOptions.checkParallel();
    } catch (IllegalArgumentException e) {
      return usage(err, e.getMessage());
    }
    LayerMix mix;
    try {
      mix = LayerMix.parse(modelLayers, "--model-layers");
    } catch (IllegalArgumentException e) {
      return usage(err, e.getMessage());
    }
    if (snapshotInterval != null && snapshotInterval < 1) {
      return usage(
          err,
          "--snapshot-interval="
              + snapshotInterval
              + " must be at least 1: the pages between two recurrent-state snapshots");
    }
    boolean windows;
    try {
      windows = HybridOptions.windows(swaCache);
    } catch (IllegalArgumentException e) {
      return usage(err, e.getMessage());
    }
    if (windows && !mix.hasSwa()) {
      return usage(
          err,
          "--swa-cache windows keeps the KV of swa:W layers as windows, but --model-layers "
              + mix
              + " has none: drop --swa-cache, or give a mix with an SWA layer such as"
              + " full,swa:64");
    }
    // The model is found by name through ServiceLoader, as an embedder finds one.
    try {
      served =
          tiny
              ? ServedModel.tiny(
                  modelSeed,
                  mix,
                  windows ? HybridOptions.WINDOWS : HybridOptions.PAGES,
                  windows,
                  Optional.ofNullable(maxContext))
              : ServedModel.gguf(
                  Path.of(modelOption.strip()),
                  Optional.ofNullable(maxContext),
                  Optional.ofNullable(speculative).map(String::strip),
                  Optional.ofNullable(speculativeTokens),
                  Optional.ofNullable(kvType));
    } catch (IllegalArgumentException e) {
      return usage(err, "--model " + modelOption + ": " + e.getMessage());
    }
    servedName = modelName != null ? modelName.strip() : served.name();
    Optional<Path> temporaryStore = Optional.empty();
    PrintWriter out = spec.commandLine().getOut();
    try (ServedModel model = served) {
      KvTierConfig kvtier = configFor(model);
      temporaryStore = Optional.ofNullable(createdStore);
      try {
        // The engine checks this again when it opens, where a failure is the run's (exit 1);
        // the rank count is an option (--ranks, kvtier.ranks or mpirun's -np), so it is checked
        // here first, on every rank process alike.
        rankLayout =
            model.model().rankLayout(kvtier.layout(), kvtier.ranks(), kvtier.parallelism());
      } catch (IllegalArgumentException e) {
        return usage(err, e.getMessage());
      }
      Optional<String> roleProblem = roleProblem(replicaRole, kvtier);
      if (roleProblem.isPresent()) {
        return usage(err, roleProblem.get());
      }
      transfers =
          new TransferSettings(
              replicaRole,
              sharedStore(kvtier) && !engineOptions.noPrefixCache,
              replicaId != null ? replicaId.strip() : bind + ":" + port,
              kvtier.ranks(),
              kvtier.parallelism().configName(),
              kvtier.cache().pageSize(),
              rankLayout.pageBytes() * kvtier.ranks());
      long poolTokens = (long) kvtier.cache().devicePages() * kvtier.cache().pageSize();
      // A GGUF model's context is what its file says or --max-context asks: one sequence of it
      // must fit a rank's device pool. The tiny transformer's pools are often made small on
      // purpose (to evict), and its context is then the pool's (GenerationEngine.contextLimit).
      if (model.tiny().isEmpty() && poolTokens < model.model().maxContext()) {
        return usage(
            err,
            "the device pool holds "
                + poolTokens
                + " tokens ("
                + KvTierKeys.DEVICE_PAGES
                + "="
                + kvtier.cache().devicePages()
                + " pages of "
                + kvtier.cache().pageSize()
                + "), less than one sequence of the model's context of "
                + model.model().maxContext()
                + " tokens: give "
                + KvTierKeys.DEVICE_PAGES
                + " of at least "
                + ceilDiv(model.model().maxContext(), kvtier.cache().pageSize())
                + ", or --max-context "
                + poolTokens
                + " or less");
      }
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      EngineSettings settings = engineOptions.settings(kvtier, queue, System.getenv());
      Optional<GenerationEngine> serving;
      try (StopSignals signals = StopSignals.install(() -> onSignal(settings, err))) {
        serving = openEngine(model, kvtier, registry);
        if (serving.isEmpty()) {
          out.println(
              "kvtier serve: rank "
                  + settings.rank()
                  + " ends with its group: rank 0 stopped serving");
          out.flush();
          return 0;
        }
        return serve(
            serving.get(), settings, kvtier, registry, address, key, tenants, namespaces, out, err);
      }
    } finally {
      stopped.countDown();
      temporaryStore.ifPresent(ServeCommand::deleteTree);
    }
  }

  /**
   * What SIGINT or SIGTERM does: rank 0 while it serves stops gracefully, closing the group; a
   * follower rank waits for rank 0 to end the group (under mpirun every rank gets the signal, and
   * a follower that left first would fail the others); before rank 0 serves, nothing is there to
   * stop gracefully.
   *
   * @return true if the signal started a graceful stop
   */
  private boolean onSignal(EngineSettings settings, PrintWriter err) {
    if (!settings.isServingRank()) {
      err.println(
          "kvtier serve: rank "
              + settings.rank()
              + " stops when rank 0 stops the group; signal it again to end it now");
      err.flush();
      return true;
    }
    if (server == null) {
      return false;
    }
    stop();
    return true;
  }

  /** Serves on rank 0 until stopped, then closes the engine (ending the group). */
  private int serve(
      GenerationEngine opened,
      EngineSettings settings,
      KvTierConfig kvtier,
      PrometheusMeterRegistry registry,
      InetAddress address,
      Optional<String> key,
      Optional<ApiKeys> tenants,
      CacheNamespaces namespaces,
      PrintWriter out,
      PrintWriter err)
      throws InterruptedException {
    try (GenerationEngine engine = opened) {
      KvTierMeters.bind(registry, engine::stats);
      KvLayout rank = rankLayout;
      Gauge.builder("kvtier.kv.bytes.per.token", () -> (double) rank.pageBytes() / rank.pageSize())
          .description(
              "KV bytes of one token (K and V of every layer) in one rank's pools: the model's"
                  + " over the ranks, by heads (tp) or by positions (cp)")
          .strongReference(true)
          .register(registry);
      CompletionServer started;
      try {
        started =
            CompletionServer.start(
                engine,
                registry,
                new InetSocketAddress(address, port),
                new CompletionServer.Options(
                        servedName,
                        key,
                        1 << 20,
                        Duration.ofSeconds(readTimeoutSeconds),
                        Duration.ofSeconds(requestTimeoutSeconds),
                        served.layerMix())
                    .withTenants(tenants, namespaces)
                    .withTransfers(transfers));
      } catch (IOException e) {
        return usage(
            err,
            "cannot listen on "
                + bind
                + ":"
                + port
                + " ("
                + rootMessage(e)
                + "): choose another --port, or 0 for a free one");
      }
      if (!address.isLoopbackAddress() && key.isEmpty() && tenants.isEmpty()) {
        err.println(
            "kvtier serve: warning: listening on "
                + bind
                + " without an API key: anyone who can reach this address can use the server;"
                + " set --api-key or KVTIER_API_KEY");
        err.flush();
      }
      if (hasStore(kvtier) && tenants.isPresent() && !namespaces.configured()) {
        err.println(
            "kvtier serve: warning: the tenants' prefixes go to the L3 store in namespaces keyed"
                + " by a secret made at start, which no other replica, nor this server after a"
                + " restart, can find; give every replica the same --namespace-secret-file");
        err.flush();
      }
      if (hasStore(kvtier)
          && kvtier.cache().hostPages() > 0
          && kvtier.cache().hostPages() <= kvtier.cache().devicePages()
          && kvtier.cache().writePolicy() == WritePolicy.WRITE_THROUGH) {
        err.println(
            "kvtier serve: warning: the host tier ("
                + KvTierKeys.HOST_PAGES
                + "="
                + kvtier.cache().hostPages()
                + ") is no larger than the device pool ("
                + KvTierKeys.DEVICE_PAGES
                + "="
                + kvtier.cache().devicePages()
                + "): under write_through it holds copies of device pages, which an L3 prefetch"
                + " may not evict, so little comes back from --l3 (counted in"
                + " kvtier_l3_pages_total{kind=\"no_host_room\"}); give "
                + KvTierKeys.HOST_PAGES
                + " more pages than "
                + KvTierKeys.DEVICE_PAGES);
        err.flush();
      }
      windowsWarning(kvtier)
          .ifPresent(
              warning -> {
                err.println(warning);
                err.flush();
              });
      if (settings.rank() != EngineSettings.ALL_RANKS) {
        out.printf(
            "kvtier serve: rank 0 of %d (%s) serves in process %d; stop that process (SIGINT"
                + " or SIGTERM) to stop every rank%n",
            kvtier.ranks(),
            kvtier.provider(ProviderKind.COLLECTIVE),
            ProcessHandle.current().pid());
      }
      return serveUntilStopped(started, kvtier, engine, out);
    }
  }

  /**
   * The engine that serves the model, on rank 0; on another rank of a one-rank-per-process group,
   * runs that rank until rank 0 stops, then empty. The one call into the engine's code.
   */
  private Optional<GenerationEngine> openEngine(
      ServedModel model, KvTierConfig kvtier, PrometheusMeterRegistry registry) {
    return engineOptions.openOrFollow(
        model.model(),
        kvtier,
        queue,
        new MicrometerBackendMetrics(registry),
        collective -> new TimedCollective(collective, registry));
  }

  /** Serves until stopped; returns 0, or 1 if the engine failed for good (the cause on stderr). */
  private int serveUntilStopped(
      CompletionServer started, KvTierConfig kvtier, GenerationEngine engine, PrintWriter out)
      throws InterruptedException {
    ApiException failed = null;
    // The JVM halts once its hooks return: the hook waits for the graceful shutdown.
    Thread hook = new Thread(this::stopAndWait, "kvtier-serve-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try (started) {
      server = started;
      InetSocketAddress at = started.address();
      out.printf(
          "kvtier serve: listening on http://%s:%d, model %s (%s; %sdevice %d pages, host %d"
              + " pages of %d tokens; write %s, eviction %s; L3 %s)%s%n",
          at.getHostString(),
          at.getPort(),
          servedName,
          served.description(),
          kvtier.ranks() > 1 ? kvtier.ranks() + " ranks " + kvtier.parallelism() + "; " : "",
          kvtier.cache().devicePages(),
          kvtier.cache().hostPages(),
          kvtier.cache().pageSize(),
          kvtier.cache().writePolicy().configName(),
          kvtier.cache().evictionPolicy().configName(),
          l3Description(kvtier),
          transfers.role() == TransferSettings.Role.BOTH
              ? ""
              : ", role " + transfers.role().configName());
      out.flush();
      while (!stop.await(100, TimeUnit.MILLISECONDS)) {
        if (started.failure().isDone()) {
          failed = started.failure().join();
          break;
        }
      }
    } finally {
      server = null;
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // The JVM is already shutting down and running the hook: nothing to remove.
      }
    }
    if (failed != null) {
      PrintWriter err = spec.commandLine().getErr();
      err.println("kvtier serve: stopped: " + failed.getMessage());
      err.flush();
      return KvTierCli.EXIT_FAILURE;
    }
    out.println("kvtier serve: stopped after " + engine.stats().requests() + " requests");
    out.flush();
    return 0;
  }

  private static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }

  private static int usage(PrintWriter err, String message) {
    err.println("kvtier serve: " + message + "; see kvtier serve --help");
    err.flush();
    return EXIT_USAGE;
  }

  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null) {
      root = root.getCause();
    }
    return root.getMessage() == null ? root.toString() : root.getMessage();
  }

  private void stopAndWait() {
    stop();
    try {
      stopped.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Ends {@link #call()} after a graceful shutdown; for the shutdown hook and for tests. */
  void stop() {
    stop.countDown();
  }

  /**
   * The warning for SWA windows that cost more memory than the SWA pages they replace: per
   * interval of K pages, the pages mode keeps K pages of every layer's block, the windows mode K
   * pages of the full-attention blocks plus a snapshot of S slots (tails aside).
   */
  private Optional<String> windowsWarning(KvTierConfig kvtier) {
    if (served.tiny().isEmpty() || !served.tiny().get().windowedSwa()) {
      return Optional.empty();
    }
    ModelConfig tiny = served.tiny().get();
    int k = kvtier.cache().snapshotIntervalPages();
    int slots =
        TinyModelRunner.snapshotSlots(
            tiny, tiny.kvLayout(kvtier.cache().pageSize(), kvtier.ranks()));
    long all = tiny.layers();
    long kept = tiny.pageLayers();
    if ((long) k * kept + slots * kept < k * all) {
      return Optional.empty();
    }
    String fix =
        all > kept
            ? "give --snapshot-interval "
                + (slots * kept / (all - kept) + 1)
                + " or more, or --swa-cache pages"
            : "a page of " + tiny.layerMix() + " has one block either way: use --swa-cache pages";
    return Optional.of(
        "kvtier serve: warning: --swa-cache windows saves no device memory here: a snapshot every"
            + " "
            + k
            + " pages (kvtier.snapshot-interval-pages) carries the SWA windows in "
            + slots
            + " page slots, no fewer than the SWA blocks of the "
            + k
            + " pages it replaces; "
            + fix);
  }

  /**
   * The running server, for tests.
   *
   * @return the server, or null before it started or after it stopped
   */
  CompletionServer server() {
    return server;
  }

  private KvTierConfig configFor(ServedModel model) {
    KvTierConfigBuilder builder = KvTierConfig.builder();
    Map<String, String> fixed = model.fixedKeys();
    if (config != null) {
      builder.propertiesFile(config);
      checkFixed(fileProperties(config), fixed, "--config " + config, model);
    }
    Properties system = System.getProperties();
    builder.systemProperties(system);
    checkFixed(system, fixed, "the system properties", model);
    fixed.forEach(builder::set);
    if (model.tiny().isEmpty()) {
      // A GGUF model computes on the CPU: its pools default to RAM with real copies (cpu), not
      // the simulator's modelled delays (sim), unless the config or a property names others.
      Properties configured = config == null ? new Properties() : fileProperties(config);
      for (String key : List.of(KvTierKeys.DEVICE, KvTierKeys.HOST)) {
        if (configured.getProperty(key) == null && system.getProperty(key) == null) {
          builder.set(key, "cpu");
        }
      }
    }
    engineOptions.applyTo(builder, System.getenv());
    l3Options(builder, model);
    if (snapshotInterval != null) {
      builder.snapshotIntervalPages(snapshotInterval);
    }
    return builder.build();
  }

  /**
   * The {@code --l3*} options, as explicit settings over the config file and the system
   * properties. The L3 keys carry the model's seed and layer mix unless a model id is configured:
   * pages of differently seeded weights, or of another mix (a layer's KV depends on the kinds of
   * the layers below it), must never be shared through a store that outlives the process.
   */
  private void l3Options(KvTierConfigBuilder builder, ServedModel model) {
    Properties configured = config == null ? new Properties() : fileProperties(config);
    configured.putAll(System.getProperties());
    if (configured.getProperty(KvTierKeys.L3_MODEL_ID) == null) {
      builder.set(KvTierKeys.L3_MODEL_ID, model.l3ModelId());
    }
    if (l3 != null) {
      builder.set(KvTierKeys.STORE, l3.strip());
    }
    String store =
        l3 != null ? l3.strip() : configured.getProperty(KvTierKeys.STORE, "none").strip();
    if (l3Dir != null && !store.equals("file")) {
      throw new IllegalArgumentException(
          "--l3-dir="
              + l3Dir
              + " is for the file store, but"
              + " the L3 store is "
              + store
              + ": add --l3 file or drop --l3-dir");
    }
    if (store.equals("file")) {
      Path dir = l3Dir;
      if (dir == null && configured.getProperty("file.directory") == null) {
        try {
          dir = Files.createTempDirectory(TEMPORARY_STORE_PREFIX);
          createdStore = dir;
        } catch (IOException e) {
          throw new UncheckedIOException(
              "cannot create a directory for the file store: "
                  + e.getMessage()
                  + "; give one with --l3-dir",
              e);
        }
      }
      if (dir != null) {
        builder.set("file.directory", dir.toString());
      }
    }
    if (l3Mib != null) {
      if (l3Mib < 1 || l3Mib > Long.MAX_VALUE >> 20) {
        throw new IllegalArgumentException("--l3-mib=" + l3Mib + " must be at least 1");
      }
      builder.set(KvTierKeys.L3_BYTES, Long.toString(l3Mib << 20));
    }
    if (l3Policy != null) {
      builder.set(KvTierKeys.L3_PREFETCH_POLICY, l3Policy);
    }
    if (l3Threshold != null) {
      builder.set(KvTierKeys.L3_PREFETCH_THRESHOLD, Integer.toString(l3Threshold));
    }
  }

  /**
   * Why {@code role} cannot run with this configuration, or empty: a prefill or decode replica
   * needs an L3 store the other replicas share (not {@code memory}, which is the process's own,
   * nor a file store in a temporary directory of its own) and prefix caching.
   */
  private Optional<String> roleProblem(TransferSettings.Role role, KvTierConfig kvtier) {
    if (role == TransferSettings.Role.BOTH) {
      return Optional.empty();
    }
    String name = "--role " + role.configName();
    String store = kvtier.providers().getOrDefault(ProviderKind.STORE, "none");
    if (store.equals("none") || store.equals("memory")) {
      return Optional.of(
          name
              + " moves prompts through an L3 store the prefill and decode replicas share, but"
              + " the L3 store is "
              + store
              + (store.equals("memory") ? " (this process's own)" : "")
              + ": add --l3 file --l3-dir DIR (replicas on one machine) or --l3 hazelcast"
              + " (across machines)");
    }
    if (store.equals("file") && createdStore != null) {
      return Optional.of(
          name
              + " with --l3 file needs the directory the replicas share: add --l3-dir DIR, the"
              + " same on every prefill and decode replica");
    }
    if (engineOptions.noPrefixCache) {
      return Optional.of(
          name
              + " finds the published prompt through the prefix cache, but --no-prefix-cache"
              + " turns it off: drop --no-prefix-cache");
    }
    return Optional.empty();
  }

  /** Whether the L3 store is one other replicas can share. */
  private boolean sharedStore(KvTierConfig kvtier) {
    String store = kvtier.providers().getOrDefault(ProviderKind.STORE, "none");
    return !store.equals("none")
        && !store.equals("memory")
        && !(store.equals("file") && createdStore != null);
  }

  /** Whether the configuration names an L3 store. */
  private static boolean hasStore(KvTierConfig kvtier) {
    String store = kvtier.providers().get(ProviderKind.STORE);
    return store != null && !store.equals("none");
  }

  private String l3Description(KvTierConfig kvtier) {
    if (!hasStore(kvtier)) {
      return "none";
    }
    return kvtier.providers().get(ProviderKind.STORE)
        + ", "
        + (kvtier.l3().capacityBytes() >> 20)
        + " MiB, "
        + kvtier.l3().prefetchPolicy().configName()
        + " prefetch of "
        + kvtier.l3().prefetchThreshold()
        + "+ tokens"
        + (createdStore != null
            ? " in " + createdStore + " (deleted at stop)"
            : l3Dir != null ? " in " + l3Dir : "");
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      System.getLogger(ServeCommand.class.getName())
          .log(
              System.Logger.Level.WARNING,
              "cannot delete the file store's temporary directory " + dir + ": " + e.getMessage());
    }
  }

  /** A source that sets a key the model fixes to another value is a mistake: say so. */
  private static void checkFixed(
      Properties source, Map<String, String> fixed, String origin, ServedModel model) {
    fixed.forEach(
        (key, value) -> {
          String set = source.getProperty(key);
          if (set != null && !set.strip().equals(value)) {
            throw new IllegalArgumentException(
                key
                    + "="
                    + set.strip()
                    + " in "
                    + origin
                    + " does not fit the model ("
                    + model.description()
                    + "), which needs "
                    + key
                    + "="
                    + value
                    + ": remove the key");
          }
        });
  }

  private static Properties fileProperties(Path file) {
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      properties.load(reader);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
    }
    return properties;
  }
}
