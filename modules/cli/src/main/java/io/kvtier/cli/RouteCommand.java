package io.kvtier.cli;

import com.hazelcast.core.HazelcastInstance;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.events.KvEvents;
import io.kvtier.events.KvEventsConfig;
import io.kvtier.route.KvRouter;
import io.kvtier.route.PromptTokens;
import io.kvtier.route.ReplicaSpec;
import io.kvtier.route.RoutePolicy;
import io.kvtier.route.RouteScore;
import io.kvtier.serving.ModelText;
import java.io.PrintWriter;
import java.net.BindException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier route}: the cache-aware router over {@code kvtier serve} replicas ({@link
 * KvRouter}), until the process is stopped.
 */
@Command(
    name = "route",
    mixinStandardHelpOptions = true,
    description = {
      "Routes OpenAI-compatible requests (POST /v1/completions, /v1/chat/completions,"
          + " GET /v1/models) to kvtier serve replicas, each to the replica with the best"
          + " score: overlapWeight * (device blocks + hostWeight * host blocks) - load blocks"
          + " (the uncached prompt blocks of its requests in flight), learned from the replicas'"
          + " KV events (docs/EVENTS.md). Streams pass through. A failing replica leaves the"
          + " rotation and its blocks are forgotten; a request it had not begun to answer goes"
          + " to another, a stream it had begun ends with an error event.",
      "With --prefill and --decode instead of --replica (prefill/decode disaggregation,"
          + " docs/SERVE.md): each request is computed on a prefill replica (its prompt and one"
          + " token), then sent with that answer's kv_transfer_params handle to a decode"
          + " replica, whose answer or stream goes to the client."
    })
final class RouteCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Option(
      names = "--replica",
      paramLabel = "HTTP,EVENTS[,REPLAY]",
      description =
          "A replica: its HTTP base, its kvtier.events.endpoint and kvtier.events.replay-endpoint,"
              + " for example http://h:8080,tcp://h:5557,tcp://h:5558, or its HTTP base and"
              + " hazelcast:RINGBUFFER (with --hazelcast-addresses); repeat per replica. Not with"
              + " --prefill/--decode.")
  private List<String> replicas = new ArrayList<>();

  @Option(
      names = "--prefill",
      paramLabel = "HTTP,EVENTS[,REPLAY]",
      description =
          "A prefill replica (kvtier serve --role prefill, or both), in --replica's form; repeat"
              + " per replica. Needs --decode; not with --replica.")
  private List<String> prefill = new ArrayList<>();

  @Option(
      names = "--decode",
      paramLabel = "HTTP,EVENTS[,REPLAY]",
      description =
          "A decode replica (kvtier serve --role decode, or both), in --replica's form; repeat"
              + " per replica. Needs --prefill; not with --replica.")
  private List<String> decode = new ArrayList<>();

  @Option(
      names = "--decode-overlap-weight",
      paramLabel = "WEIGHT",
      description =
          "With --decode: weight of a block a decode replica holds against a block of its load"
              + " (the KV of its requests in flight) (default: 1.0; --overlap-weight weighs the"
              + " prefill pool).")
  private Double decodeOverlapWeight;

  @Option(
      names = "--port",
      defaultValue = "8000",
      description = "TCP port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  private int port;

  @Option(
      names = "--bind",
      defaultValue = "127.0.0.1",
      description = "Address to listen on (default: ${DEFAULT-VALUE}, loopback only).")
  private String bind;

  @Option(
      names = "--page-size",
      defaultValue = "" + KvTierConfig.DEFAULT_PAGE_SIZE,
      description = "The replicas' kvtier.page-size (default: ${DEFAULT-VALUE}).")
  private int pageSize;

  @Option(
      names = "--api-key",
      description = "Key clients must send (Authorization: Bearer KEY); forwarded to replicas.")
  private String apiKey;

  @Option(
      names = "--replica-api-key",
      description = "Key sent to the replicas instead of --api-key.")
  private String replicaApiKey;

  @Option(
      names = "--api-key-file",
      paramLabel = "FILE",
      description =
          "The replicas' key file of tenants (KEY TENANT per line): clients must send one of its"
              + " keys, which is forwarded to the replica, and each prompt is matched only"
              + " against its own tenant's cached blocks. Not with --api-key.")
  private Path apiKeyFile;

  @Option(
      names = "--namespace-secret-file",
      paramLabel = "FILE",
      description =
          "The replicas' --namespace-secret-file: without it the router cannot name the"
              + " namespaces of tenants and cache_salt values, and routes their prompts by load.")
  private Path namespaceSecretFile;

  @Option(
      names = "--shared-cache-salt",
      paramLabel = "SALT",
      description = "The replicas' --shared-cache-salt.")
  private String sharedCacheSalt;

  @Option(
      names = "--overlap-weight",
      defaultValue = "16.0",
      description = "Weight of a cached block against a block of load (default: ${DEFAULT-VALUE}).")
  private double overlapWeight;

  @Option(
      names = "--host-weight",
      defaultValue = "0.5",
      description = "Weight of a host block against a device block (default: ${DEFAULT-VALUE}).")
  private double hostWeight;

  @Option(
      names = "--policy",
      defaultValue = "prefix",
      description =
          "prefix (the best score, the default) or round-robin (every request to the next"
              + " replica in turn, cache-blind: the baseline to measure prefix routing against).")
  private String policy;

  @Option(
      names = "--replica-read-timeout",
      paramLabel = "SECONDS",
      defaultValue = "60",
      description =
          "How long a replica may send nothing (until a reply's headers, between a stream's"
              + " events) before the request fails there; one not yet answered goes to another"
              + " replica, a stream already begun ends with an error event. Before the headers a"
              + " replica that still answers GET /health is busy and waited for, up to"
              + " --replica-answer-timeout (default: ${DEFAULT-VALUE}).")
  private long replicaReadTimeout;

  @Option(
      names = "--replica-answer-timeout",
      paramLabel = "SECONDS",
      description =
          "How long a replica that still answers GET /health may take to begin its answer (an"
              + " answer that is not streamed, and every prefill answer, comes whole, after the"
              + " replica's queue and the generation); past --replica-read-timeout without one the"
              + " router asks /health, and a replica that does not answer fails the request"
              + " (default: 900, or --replica-read-timeout if longer).")
  private Long replicaAnswerTimeout;

  @Option(
      names = "--hazelcast-addresses",
      paramLabel = "HOST:PORT[,...]",
      description =
          "The Hazelcast cluster whose ringbuffers hold the events of replicas given as"
              + " HTTP,hazelcast:RINGBUFFER (their kvtier.events.publisher=hazelcast); every"
              + " router on the cluster reads them all and builds the same index.")
  private String hazelcastAddresses;

  @Option(
      names = "--hazelcast-cluster-name",
      defaultValue = "dev",
      description = "The cluster's name (default: ${DEFAULT-VALUE}).")
  private String hazelcastClusterName;

  @Option(
      names = "--model",
      paramLabel = "tiny|FILE.gguf",
      defaultValue = "tiny",
      description =
          "The replicas' model: its tokenizer and chat template turn a text prompt into the token"
              + " ids the replicas cache, so that its prefix is found in their events; give the"
              + " file the replicas serve (default: ${DEFAULT-VALUE}).")
  private String model;

  @Override
  public Integer call() throws Exception {
    boolean disaggregated = !prefill.isEmpty() || !decode.isEmpty();
    if (disaggregated && !replicas.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(),
          "--replica and --prefill/--decode are exclusive: --replica routes to unified replicas"
              + " (each prefills and decodes), --prefill with --decode to disaggregated pools;"
              + " give one or the other");
    }
    if (!disaggregated && replicas.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(),
          "give the replicas: --replica HTTP,EVENTS[,REPLAY] per unified replica, or --prefill"
              + " and --decode (each HTTP,EVENTS[,REPLAY]) per prefill and decode replica");
    }
    if (disaggregated && decode.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(),
          "--prefill needs at least one --decode replica: a prefill replica answers only the"
              + " first token, and its handle goes to a decode replica for the rest");
    }
    if (disaggregated && prefill.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(),
          "--decode needs at least one --prefill replica (replicas that do both: --replica)");
    }
    if (!disaggregated && decodeOverlapWeight != null) {
      throw new ParameterException(
          spec.commandLine(),
          "--decode-overlap-weight weighs the decode pool: give it with --prefill and --decode");
    }
    List<ReplicaSpec> specs;
    List<ReplicaSpec> prefillSpecs;
    List<ReplicaSpec> decodeSpecs;
    RouteScore score;
    KvRouter.Options options;
    try {
      specs = replicas.stream().map(r -> ReplicaSpec.parse("--replica", r)).toList();
      prefillSpecs = prefill.stream().map(r -> ReplicaSpec.parse("--prefill", r)).toList();
      decodeSpecs = decode.stream().map(r -> ReplicaSpec.parse("--decode", r)).toList();
      score = new RouteScore(overlapWeight, hostWeight);
      options =
          new KvRouter.Options(
              bind,
              port,
              pageSize,
              score,
              RoutePolicy.parse(policy),
              Optional.ofNullable(apiKey),
              Optional.ofNullable(replicaApiKey).or(() -> Optional.ofNullable(apiKey)),
              Duration.ofSeconds(2),
              Duration.ofSeconds(replicaReadTimeout));
      if (replicaAnswerTimeout != null) {
        options = options.withAnswerTimeout(Duration.ofSeconds(replicaAnswerTimeout));
      }
      if (decodeOverlapWeight != null) {
        if (!(decodeOverlapWeight >= 0)) {
          throw new IllegalArgumentException(
              "--decode-overlap-weight " + decodeOverlapWeight + " must be >= 0");
        }
        options = options.withDecodeScore(new RouteScore(decodeOverlapWeight, hostWeight));
      } else {
        options =
            options.withDecodeScore(
                new RouteScore(KvRouter.Options.DECODE_SCORE.overlapWeight(), hostWeight));
      }
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    Optional<ApiKeys> tenants = Optional.empty();
    if (apiKeyFile != null) {
      if (apiKey != null || replicaApiKey != null) {
        throw new ParameterException(
            spec.commandLine(),
            "--api-key-file forwards each client's own key to the replicas: drop --api-key and"
                + " --replica-api-key");
      }
      try {
        tenants = Optional.of(ApiKeys.read(apiKeyFile));
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "--api-key-file " + e.getMessage(), e);
      }
    }
    if (sharedCacheSalt != null && sharedCacheSalt.isEmpty()) {
      throw new ParameterException(
          spec.commandLine(), "--shared-cache-salt is empty: give a salt, or drop the option");
    }
    try {
      Optional<String> shared = Optional.ofNullable(sharedCacheSalt);
      options =
          options.withTenants(
              tenants,
              namespaceSecretFile == null
                  ? CacheNamespaces.random(shared)
                  : CacheNamespaces.of(CacheNamespaces.readSecret(namespaceSecretFile), shared));
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          spec.commandLine(), "--namespace-secret-file " + e.getMessage(), e);
    }
    if (!model.strip().equals("tiny")) {
      options = options.withPrompts(modelPrompts(Path.of(model.strip())));
    }
    Optional<HazelcastInstance> hazelcast = Optional.empty();
    KvRouter router;
    try {
      if (hazelcastAddresses != null) {
        hazelcast =
            Optional.of(
                KvEvents.hazelcastClient(
                    KvEventsConfig.fromProperties(
                        Map.of(
                            KvEventsConfig.PUBLISHER,
                            "hazelcast",
                            KvEventsConfig.HAZELCAST_ADDRESSES,
                            hazelcastAddresses,
                            KvEventsConfig.HAZELCAST_CLUSTER_NAME,
                            hazelcastClusterName))));
      }
      router =
          disaggregated
              ? KvRouter.disaggregated(prefillSpecs, decodeSpecs, options, hazelcast)
              : new KvRouter(specs, options, hazelcast);
    } catch (BindException e) {
      hazelcast.ifPresent(HazelcastInstance::shutdown);
      throw new ParameterException(
          spec.commandLine(), "--port " + port + " is in use: choose another (0 picks a free one)");
    } catch (IllegalArgumentException e) {
      hazelcast.ifPresent(HazelcastInstance::shutdown);
      throw new ParameterException(
          spec.commandLine(),
          e.getMessage()
              .replace(KvEventsConfig.HAZELCAST_ADDRESSES, "--hazelcast-addresses")
              .replace(KvEventsConfig.HAZELCAST_CLUSTER_NAME, "--hazelcast-cluster-name"),
          e);
    }
    Optional<HazelcastInstance> cluster = hazelcast;
    PrintWriter out = spec.commandLine().getOut();
    out.println(
        "kvtier route: listening on http://"
            + bind
            + ":"
            + router.port()
            + (disaggregated
                ? " over "
                    + prefillSpecs.size()
                    + " prefill and "
                    + decodeSpecs.size()
                    + " decode replicas"
                : " over " + specs.size() + " replicas"));
    out.flush();
    CountDownLatch stop = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  router.close();
                  cluster.ifPresent(HazelcastInstance::shutdown);
                  stop.countDown();
                },
                "kvtier-route-shutdown"));
    stop.await();
    return 0;
  }

  /**
   * The prompt reader of a GGUF model, through the text that {@code kvtier serve --model} gives
   * the same file: the router then hashes exactly the ids the replicas cache. The model stays
   * open (its weights mapped, never read) for the router's life.
   */
  private PromptTokens modelPrompts(Path file) {
    ServedModel served;
    try {
      served = ServedModel.gguf(file, Optional.empty());
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          spec.commandLine(), "--model " + file + ": " + e.getMessage(), e);
    }
    return textPrompts(served.model().text());
  }

  /** A reader over a model's text; a prompt its tokenizer or template refuses gives no ids. */
  static PromptTokens textPrompts(ModelText text) {
    return PromptTokens.of(
        new PromptTokens.Text() {
          @Override
          public int[] encode(String prompt) {
            try {
              return text.encode(prompt);
            } catch (RuntimeException e) {
              return new int[0];
            }
          }

          @Override
          public int[] chat(List<String> roles, List<String> contents) {
            List<ModelText.Message> messages = new ArrayList<>();
            for (int i = 0; i < roles.size(); i++) {
              messages.add(new ModelText.Message(roles.get(i), contents.get(i)));
            }
            try {
              return text.chat(messages);
            } catch (RuntimeException e) {
              return new int[0];
            }
          }
        });
  }
}
