package io.kvtier.route;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.hazelcast.core.HazelcastInstance;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvtier.core.cache.PageHasher;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.spi.PageKey;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code kvtier route}: an OpenAI-compatible HTTP front ({@code POST /v1/completions}, {@code
 * POST /v1/chat/completions}, {@code GET /v1/models}) over N {@code kvtier serve} replicas. It
 * follows each replica's KV events into a {@link PrefixIndex}, sends each request to the replica
 * with the best {@link RouteScore} (or in turn, {@link RoutePolicy#ROUND_ROBIN}), and passes the
 * reply through ({@link ReplyRelay}: a stream stays a stream). A replica that fails a request
 * before the client got anything (unreachable, reset, silent past the read timeout) is taken out
 * of rotation and its blocks forgotten, and the request goes to the next best replica; one that
 * fails a stream already begun ends it with an error event. A health check every second puts a
 * replica back once it answers, and its events fill the index again (its new stream begins with
 * AllBlocksCleared). The replicas' events come over ZeroMQ ({@link ReplicaEvents}) or Hazelcast
 * ringbuffers ({@link HazelcastReplicaEvents}), which several routers can share.
 *
 * <p>Over prefill and decode replicas ({@link #disaggregated}, {@code kvtier route --prefill ...
 * --decode ...}) it keeps two {@link ReplicaPool}s, each with its own index, load and rotation:
 * each request is prefilled on a prefill replica ({@code max_tokens} 1, not streamed, {@code
 * "kv_transfer_params": {"do_remote_decode": true}}), then its body with that answer's {@code
 * kv_transfer_params} goes to a decode replica, whose answer or stream is relayed. A failed
 * prefill goes to the next prefill replica; a decode replica that fails before the client got
 * anything passes the same handle to the next decode replica (docs/SERVE.md, "Prefill and
 * decode replicas behind the router"). {@code GET /metrics} gives the router's meters.
 */
public final class KvRouter implements AutoCloseable {
  /** Reads request bodies into maps, lists and numbers: only to find the prompt to route. */
  private static final ObjectMapper BODIES = new ObjectMapper();

  /** The request and answer field of a prefill replica's handle, as vLLM names it. */
  static final String KV_TRANSFER_PARAMS = "kv_transfer_params";

  private static final System.Logger LOG = System.getLogger(KvRouter.class.getName());

  /**
   * The router's settings.
   *
   * @param bind the address to listen on
   * @param port the port; 0 picks a free one
   * @param pageSize the replicas' page size in tokens (the block size of their events)
   * @param score the scoring weights
   * @param policy how a replica is picked: by score, or round robin (the baseline)
   * @param apiKey the key clients must send as {@code Authorization: Bearer}; empty: none
   * @param replicaApiKey the key sent to the replicas; empty: none
   * @param replicaTimeout connect and health-check timeout per replica
   * @param replicaReadTimeout how long a replica may send nothing: until a reply's headers, and
   *     between a reply's bytes; then the request fails there (and is retried if the client got
   *     nothing yet)
   * @param tenants the keys of a key file ({@code --api-key-file}), each naming its tenant, as the
   *     replicas have them: each client's own key is then forwarded to the replica (which needs it
   *     to know the tenant), so neither {@code apiKey} nor {@code replicaApiKey} may be given;
   *     empty: {@code apiKey} alone
   * @param namespaces how a request's tenant and {@code cache_salt} choose its cache namespace,
   *     the replicas' secret and shared salt: the namespace enters its prompt's block hashes, so a
   *     request is matched only against blocks of its own namespace
   * @param prompts how a request's prompt becomes the token ids the replicas cache: their model's
   *     tokenizer and chat template ({@code kvtier route --model})
   * @param decodeScore the decode pool's scoring weights ({@code --decode-overlap-weight}); the
   *     unified and prefill pools use {@code score}
   * @param answerTimeout how long a replica that still answers {@code GET /health} may take to
   *     begin its answer ({@code --replica-answer-timeout}): an answer that is not streamed
   *     (every prefill answer) comes whole, after the replica's queue and the generation; past
   *     {@code replicaReadTimeout} without headers the router asks {@code /health}, and a replica
   *     that does not answer it fails the request as a silent one does
   */
  public record Options(
      String bind,
      int port,
      int pageSize,
      RouteScore score,
      RoutePolicy policy,
      Optional<String> apiKey,
      Optional<String> replicaApiKey,
      Duration replicaTimeout,
      Duration replicaReadTimeout,
      Optional<ApiKeys> tenants,
      CacheNamespaces namespaces,
      PromptTokens prompts,
      RouteScore decodeScore,
      Duration answerTimeout) {

    /** Validates the fields. */
    public Options {
      Objects.requireNonNull(bind, "bind");
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("--port " + port + " must be 0 to 65535");
      }
      if (pageSize < 1) {
        throw new IllegalArgumentException("--page-size " + pageSize + " must be >= 1");
      }
      Objects.requireNonNull(score, "score");
      Objects.requireNonNull(policy, "policy");
      Objects.requireNonNull(apiKey, "apiKey");
      Objects.requireNonNull(replicaApiKey, "replicaApiKey");
      Objects.requireNonNull(replicaTimeout, "replicaTimeout");
      if (replicaReadTimeout.isNegative() || replicaReadTimeout.isZero()) {
        throw new IllegalArgumentException(
            "--replica-read-timeout " + replicaReadTimeout.toSeconds() + " must be >= 1 second");
      }
      Objects.requireNonNull(tenants, "tenants");
      Objects.requireNonNull(namespaces, "namespaces");
      Objects.requireNonNull(prompts, "prompts");
      Objects.requireNonNull(decodeScore, "decodeScore");
      Objects.requireNonNull(answerTimeout, "answerTimeout");
      if (answerTimeout.compareTo(replicaReadTimeout) < 0) {
        throw new IllegalArgumentException(
            "--replica-answer-timeout "
                + answerTimeout.toSeconds()
                + " must be at least --replica-read-timeout "
                + replicaReadTimeout.toSeconds());
      }
      if (tenants.isPresent() && (apiKey.isPresent() || replicaApiKey.isPresent())) {
        throw new IllegalArgumentException(
            "--api-key-file forwards each client's own key to the replicas (their tenant):"
                + " drop --api-key and --replica-api-key");
      }
    }

    /**
     * Options without tenants: every request is the default tenant, its namespace chosen by its
     * {@code cache_salt} alone, under a secret made at start (so that a salted prompt is matched
     * against no replica's blocks: it is routed by load).
     *
     * @param bind the address to listen on
     * @param port the port; 0 picks a free one
     * @param pageSize the replicas' page size in tokens
     * @param score the scoring weights
     * @param policy how a replica is picked
     * @param apiKey the key clients must send; empty: none
     * @param replicaApiKey the key sent to the replicas; empty: none
     * @param replicaTimeout connect and health-check timeout per replica
     * @param replicaReadTimeout how long a replica may send nothing
     */
    public Options(
        String bind,
        int port,
        int pageSize,
        RouteScore score,
        RoutePolicy policy,
        Optional<String> apiKey,
        Optional<String> replicaApiKey,
        Duration replicaTimeout,
        Duration replicaReadTimeout) {
      this(
          bind,
          port,
          pageSize,
          score,
          policy,
          apiKey,
          replicaApiKey,
          replicaTimeout,
          replicaReadTimeout,
          Optional.empty(),
          CacheNamespaces.random(Optional.empty()),
          PromptTokens.BYTES,
          DECODE_SCORE,
          Duration.ofSeconds(Math.max(DEFAULT_ANSWER_SECONDS, replicaReadTimeout.toSeconds())));
    }

    /** {@code --replica-answer-timeout}'s default, in seconds. */
    public static final long DEFAULT_ANSWER_SECONDS = 900;

    /**
     * The decode pool's weights by default: a block a decode replica holds is worth one block of
     * load there (a block of KV its requests in flight hold). Why not the prefill pool's 16: a
     * block held saves the decode replica only its fetch from L3, not a prefill, and its load is
     * the KV of every generation it runs; so decode goes by load, and what a replica holds breaks
     * near-ties (a chat's next turn back to the replica that holds its last).
     */
    public static final RouteScore DECODE_SCORE = new RouteScore(1.0, 0.5);

    /**
     * These options with tenants and the replicas' namespaces.
     *
     * @param keys the key file's keys, or empty
     * @param cacheNamespaces the replicas' secret and shared salt
     * @return the options
     */
    public Options withTenants(Optional<ApiKeys> keys, CacheNamespaces cacheNamespaces) {
      return with(keys, cacheNamespaces, prompts, decodeScore, answerTimeout);
    }

    /**
     * These options with the replicas' model's text: how a prompt becomes the token ids they
     * cache ({@link PromptTokens#BYTES} for the tiny transformer, the default).
     *
     * @param modelText the reader of the replicas' model
     * @return the options
     */
    public Options withPrompts(PromptTokens modelText) {
      return with(tenants, namespaces, modelText, decodeScore, answerTimeout);
    }

    /**
     * These options with the decode pool's weights ({@code kvtier route
     * --decode-overlap-weight}).
     *
     * @param weights the decode pool's scoring weights
     * @return the options
     */
    public Options withDecodeScore(RouteScore weights) {
      return with(tenants, namespaces, prompts, weights, answerTimeout);
    }

    /**
     * These options with another {@code --replica-answer-timeout}.
     *
     * @param timeout how long a replica alive by its {@code /health} may take to begin an answer
     * @return the options
     */
    public Options withAnswerTimeout(Duration timeout) {
      return with(tenants, namespaces, prompts, decodeScore, timeout);
    }

    /** These options with other tenants, namespaces, prompts, decode weights and answer timeout. */
    private Options with(
        Optional<ApiKeys> keys,
        CacheNamespaces cacheNamespaces,
        PromptTokens modelText,
        RouteScore weights,
        Duration timeout) {
      return new Options(
          bind,
          port,
          pageSize,
          score,
          policy,
          apiKey,
          replicaApiKey,
          replicaTimeout,
          replicaReadTimeout,
          keys,
          cacheNamespaces,
          modelText,
          weights,
          timeout);
    }

    /** The keys clients are checked against. */
    ApiKeys keys() {
      return tenants.orElseGet(() -> apiKey.map(ApiKeys::single).orElse(ApiKeys.open()));
    }
  }

  /** The pools of replicas a router sends to. */
  public enum Pool {
    /** The unified replicas of {@code --replica}: each request to one of them. */
    REPLICA("--replica", "replica", "both"),
    /** The prefill replicas of {@code --prefill}: the prompt and one token, then the handle. */
    PREFILL("--prefill", "prefill", "prefill"),
    /** The decode replicas of {@code --decode}: the request with its handle, every token. */
    DECODE("--decode", "decode", "decode");

    private final String option;
    private final String label;
    private final String role;

    Pool(String option, String label, String role) {
      this.option = option;
      this.label = label;
      this.role = role;
    }

    /** The {@code kvtier route} option that names this pool's replicas. */
    public String option() {
      return option;
    }

    /** The pool's name in metrics and messages: {@code replica}, {@code prefill}, {@code decode}. */
    public String label() {
      return label;
    }

    /** Whether a replica whose {@code /health} names {@code role} serves in this pool. */
    boolean accepts(String replicaRole) {
      return replicaRole.equals("both") || replicaRole.equals(role);
    }
  }

  private final Map<Pool, ReplicaPool> pools = new EnumMap<>(Pool.class);
  private final boolean disaggregated;
  private final Options options;
  private final ApiKeys keys;
  private final SilenceWatch silence;
  private final ReplyRelay relay;
  private final HttpClient client;
  private final HttpServer server;
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Timer prefillPhase;
  private final Timer decodePhase;
  private final Timer decodeFirstBytes;
  private final Thread health;
  private volatile boolean running = true;

  /**
   * Starts following the replicas' events and serving.
   *
   * @param replicas the replicas, 1 to 64, their events all on ZeroMQ
   * @param options the settings
   * @throws IOException if the port cannot be bound
   */
  public KvRouter(List<ReplicaSpec> replicas, Options options) throws IOException {
    this(replicas, options, Optional.empty());
  }

  /**
   * Starts following the replicas' events and serving.
   *
   * @param replicas the replicas, 1 to 64
   * @param options the settings
   * @param hazelcast the cluster whose ringbuffers hold the events of replicas whose {@link
   *     ReplicaSpec#ringbuffer()} is set; several routers on one cluster build the same index
   * @throws IOException if the port cannot be bound
   * @throws IllegalArgumentException if a replica's events are in a ringbuffer and no cluster is
   *     given
   */
  public KvRouter(
      List<ReplicaSpec> replicas, Options options, Optional<HazelcastInstance> hazelcast)
      throws IOException {
    this(Map.of(Pool.REPLICA, replicas), options, hazelcast);
  }

  /**
   * Starts a router over prefill and decode replicas ({@code kvtier route --prefill ... --decode
   * ...}): each request is computed on a prefill replica (its prompt and one token), then sent
   * with the {@code kv_transfer_params} handle of that answer to a decode replica, whose answer
   * (or stream) goes to the client. First asks every replica's {@code GET /health}: one whose
   * {@code role} does not fit its pool is refused; one that does not answer yet joins its pool's
   * rotation once it answers with a role that fits.
   *
   * @param prefill the prefill replicas, 1 to 64 ({@code --role prefill} or {@code both})
   * @param decode the decode replicas, 1 to 64 ({@code --role decode} or {@code both})
   * @param options the settings
   * @param hazelcast the cluster of the ringbuffers some replicas publish their events to
   * @return the router, serving
   * @throws IOException if the port cannot be bound
   * @throws IllegalArgumentException if a pool is empty or too large, a replica answers with a
   *     role that does not fit its pool, or a ringbuffer is named without a cluster
   */
  public static KvRouter disaggregated(
      List<ReplicaSpec> prefill,
      List<ReplicaSpec> decode,
      Options options,
      Optional<HazelcastInstance> hazelcast)
      throws IOException {
    Map<Pool, List<ReplicaSpec>> specs = new EnumMap<>(Pool.class);
    specs.put(Pool.PREFILL, prefill);
    specs.put(Pool.DECODE, decode);
    return new KvRouter(specs, options, hazelcast);
  }

  private KvRouter(
      Map<Pool, List<ReplicaSpec>> specs, Options options, Optional<HazelcastInstance> hazelcast)
      throws IOException {
    Objects.requireNonNull(hazelcast, "hazelcast");
    this.options = Objects.requireNonNull(options, "options");
    this.keys = options.keys();
    this.disaggregated = !specs.containsKey(Pool.REPLICA);
    for (var e : specs.entrySet()) {
      ReplicaPool.check(e.getKey(), e.getValue(), hazelcast);
    }
    this.client =
        HttpClient.newBuilder().connectTimeout(options.replicaTimeout()).executor(executor).build();
    Map<Pool, boolean[]> rotation = disaggregated ? checkRoles(specs) : new EnumMap<>(Pool.class);
    try {
      for (var e : specs.entrySet()) {
        boolean[] in = rotation.get(e.getKey());
        if (in == null) {
          in = new boolean[e.getValue().size()];
          Arrays.fill(in, true);
        }
        pools.put(
            e.getKey(),
            new ReplicaPool(
                e.getKey(),
                e.getValue(),
                e.getKey() == Pool.DECODE ? options.decodeScore() : options.score(),
                options.policy(),
                hazelcast,
                in));
      }
      this.silence = new SilenceWatch(options.replicaReadTimeout().toNanos());
      this.relay = new ReplyRelay(silence, options.replicaReadTimeout());
      this.prefillPhase = phaseTimer("prefill");
      this.decodePhase = phaseTimer("decode");
      this.decodeFirstBytes =
          Timer.builder("kvtier.route.decode.first.bytes")
              .description(
                  "From the handle to the first bytes of the decode replica's answer sent to the"
                      + " client (a stream's first event), retries included")
              .publishPercentileHistogram()
              .minimumExpectedValue(Duration.ofMillis(1))
              .maximumExpectedValue(Duration.ofMinutes(2))
              .register(registry);
      registerMeters();
      this.server = HttpServer.create(new InetSocketAddress(options.bind(), options.port()), 0);
    } catch (IOException | RuntimeException e) {
      pools.values().forEach(ReplicaPool::close);
      client.shutdownNow();
      executor.shutdownNow();
      throw e;
    }
    server.setExecutor(executor);
    server.createContext("/v1/completions", e -> handle(e, "/v1/completions"));
    server.createContext("/v1/chat/completions", e -> handle(e, "/v1/chat/completions"));
    server.createContext("/v1/models", e -> handle(e, "/v1/models"));
    server.createContext("/metrics", this::metrics);
    server.start();
    this.health = Thread.ofPlatform().daemon().name("kvtier-route-health").start(this::checkHealth);
  }

  /**
   * Asks every replica's {@code GET /health} at once: which start in rotation (those that
   * answer), refusing any whose role does not fit its pool.
   */
  private Map<Pool, boolean[]> checkRoles(Map<Pool, List<ReplicaSpec>> specs) {
    Map<Pool, List<Future<ReplicaPool.Health>>> asked = new EnumMap<>(Pool.class);
    for (var e : specs.entrySet()) {
      asked.put(
          e.getKey(),
          e.getValue().stream()
              .map(
                  s ->
                      executor.submit(
                          () -> ReplicaPool.health(client, s.http(), options.replicaTimeout())))
              .toList());
    }
    Map<Pool, boolean[]> rotation = new EnumMap<>(Pool.class);
    List<String> misfits = new ArrayList<>();
    for (var e : asked.entrySet()) {
      Pool pool = e.getKey();
      boolean[] in = new boolean[e.getValue().size()];
      for (int r = 0; r < in.length; r++) {
        URI base = specs.get(pool).get(r).http();
        ReplicaPool.Health h;
        try {
          h = e.getValue().get(r).get();
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
          h = ReplicaPool.Health.DOWN;
        } catch (ExecutionException ex) {
          h = ReplicaPool.Health.DOWN;
        }
        String why = h.misfit(pool, base);
        if (why != null) {
          misfits.add(why);
        } else if (!h.up()) {
          LOG.log(
              System.Logger.Level.WARNING,
              pool.option()
                  + " "
                  + base
                  + " does not answer GET /health yet: out of rotation until it answers");
        }
        in[r] = h.up();
      }
      rotation.put(pool, in);
    }
    if (!misfits.isEmpty()) {
      client.shutdownNow();
      executor.shutdownNow();
      throw new IllegalArgumentException(String.join("; ", misfits));
    }
    return rotation;
  }

  private Timer phaseTimer(String phase) {
    return Timer.builder("kvtier.route.phase")
        .description(
            "Time of a disaggregated request's phases, retries included: prefill, from the"
                + " router's first prefill try to the handle; decode, from the handle to the end of"
                + " the decode replica's answer")
        .tag("phase", phase)
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofMinutes(2))
        .register(registry);
  }

  private void registerMeters() {
    for (ReplicaPool pool : pools.values()) {
      String label = pool.pool().label();
      for (int r = 0; r < pool.replicas().size(); r++) {
        int replica = r;
        Tags tags = Tags.of("pool", label, "replica", pool.replicas().get(r).http().toString());
        FunctionCounter.builder("kvtier.route.requests", pool, p -> p.routed()[replica])
            .description("Requests sent to a replica and answered there (the last try of each)")
            .tags(tags)
            .register(registry);
        FunctionCounter.builder("kvtier.route.replica.failures", pool, p -> p.failures()[replica])
            .description("Times a replica failed a request and was taken out of rotation")
            .tags(tags)
            .register(registry);
        Gauge.builder("kvtier.route.replica.up", pool, p -> p.healthy()[replica] ? 1 : 0)
            .description("1 while a replica is in rotation")
            .tags(tags)
            .register(registry);
        Gauge.builder("kvtier.route.replica.in.flight", pool, p -> p.inFlight()[replica])
            .description("Requests sent to a replica and not yet answered")
            .tags(tags)
            .register(registry);
      }
      FunctionCounter.builder("kvtier.route.retries", pool, ReplicaPool::retries)
          .description("Requests sent again to another replica of the pool after one failed them")
          .tag("pool", label)
          .register(registry);
      FunctionCounter.builder("kvtier.route.unavailable", pool, ReplicaPool::unavailable)
          .description("Requests answered 503 because no replica of the pool could take them")
          .tag("pool", label)
          .register(registry);
    }
  }

  /** The port the router listens on. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** Whether this router sends each request to a prefill and then a decode replica. */
  public boolean disaggregated() {
    return disaggregated;
  }

  /** The first pool: the unified replicas, or the prefill replicas. */
  private ReplicaPool first() {
    return pools.getOrDefault(Pool.REPLICA, pools.get(Pool.PREFILL));
  }

  /** One of the router's pools. */
  ReplicaPool pool(Pool pool) {
    return Objects.requireNonNull(pools.get(pool), () -> "no " + pool.label() + " pool");
  }

  /** The index the events of the first pool (the unified or the prefill replicas) fill. */
  public PrefixIndex index() {
    return first().index();
  }

  /** Requests sent to each replica of the first pool (the last try of each). */
  public long[] routed() {
    return first().routed();
  }

  /** Requests the router has sent to each replica of the first pool and not yet seen answered. */
  public long[] inFlight() {
    return first().inFlight();
  }

  /** Times each replica of the first pool was found failing and taken out of rotation. */
  public long[] failures() {
    return first().failures();
  }

  /** Requests sent again to another replica of the first pool after one failed them. */
  public long retries() {
    return first().retries();
  }

  /** Whether each replica of the first pool is in rotation. */
  public boolean[] healthy() {
    return first().healthy();
  }

  /** Batches of events applied per replica of the first pool. */
  public long[] eventBatches() {
    return first().eventBatches();
  }

  /** Requests sent to each replica of a pool (the last try of each). */
  public long[] routed(Pool pool) {
    return pool(pool).routed();
  }

  /** Requests the router has sent to each replica of a pool and not yet seen answered. */
  public long[] inFlight(Pool pool) {
    return pool(pool).inFlight();
  }

  /** Times each replica of a pool was found failing and taken out of rotation. */
  public long[] failures(Pool pool) {
    return pool(pool).failures();
  }

  /** Requests sent again to another replica of a pool after one failed them. */
  public long retries(Pool pool) {
    return pool(pool).retries();
  }

  /** Whether each replica of a pool is in rotation. */
  public boolean[] healthy(Pool pool) {
    return pool(pool).healthy();
  }

  /** The router's meters in Prometheus' text format, as {@code GET /metrics} gives them. */
  public String scrape() {
    return registry.scrape();
  }

  /** The prompt's block hashes as the replicas publish them. */
  long[] blockHashes(int[] tokens) {
    return blockHashes(tokens, CacheNamespaces.SHARED);
  }

  /** The block hashes of a prompt cached in {@code namespace}, as its replica's events name them. */
  long[] blockHashes(int[] tokens, long namespace) {
    int aligned = tokens.length - tokens.length % options.pageSize();
    List<PageKey> keys =
        PageHasher.pageKeys(namespace, Arrays.copyOf(tokens, aligned), options.pageSize());
    return keys.stream().mapToLong(PageKey::h0).toArray();
  }

  private void metrics(HttpExchange exchange) throws IOException {
    try (exchange) {
      if (!exchange.getRequestMethod().equals("GET")) {
        ReplyRelay.error(exchange, 405, "method_not_allowed", "/metrics takes GET");
        return;
      }
      byte[] text = registry.scrape().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      exchange.sendResponseHeaders(200, text.length);
      exchange.getResponseBody().write(text);
    }
  }

  private void handle(HttpExchange exchange, String path) throws IOException {
    try (exchange) {
      String header = exchange.getRequestHeaders().getFirst("Authorization");
      String given =
          header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)
              ? header.substring(7).strip()
              : "";
      // Compared in constant time with every key, as serve does.
      Optional<String> tenant = keys.tenant(given);
      if (tenant.isEmpty()) {
        ReplyRelay.error(
            exchange,
            401,
            "invalid_api_key",
            "missing or wrong API key: send Authorization: Bearer <key>");
        return;
      }
      boolean post = !path.equals("/v1/models");
      if (!exchange.getRequestMethod().equals(post ? "POST" : "GET")) {
        ReplyRelay.error(
            exchange, 405, "method_not_allowed", path + " takes " + (post ? "POST" : "GET"));
        return;
      }
      byte[] body = exchange.getRequestBody().readAllBytes();
      long[] hashes = new long[0];
      JsonNode tree = null;
      if (post) {
        try {
          tree = BODIES.readTree(body);
          if (tree instanceof ObjectNode) {
            Map<?, ?> m = BODIES.convertValue(tree, Map.class);
            Object salt = m.get("cache_salt");
            if (salt == null || salt instanceof String s && !s.isEmpty()) {
              long namespace =
                  options.namespaces().namespace(tenant.get(), Optional.ofNullable((String) salt));
              hashes = blockHashes(options.prompts().tokens(m), namespace);
            }
          }
        } catch (IOException | IllegalArgumentException e) {
          // Not ours to judge: the replica answers a bad body with its own error.
          hashes = new long[0];
          tree = null;
        }
      }
      String clientKey = options.tenants().isPresent() ? header : null;
      if (!disaggregated) {
        forward(pools.get(Pool.REPLICA), exchange, path, body, hashes, clientKey);
      } else if (tree instanceof ObjectNode request) {
        disaggregate(exchange, path, request, hashes, clientKey);
      } else {
        // GET /v1/models, or a body no replica takes: a decode replica answers it as it is
        // (it serves requests without a handle too, as a unified replica does).
        forward(pools.get(Pool.DECODE), exchange, path, body, hashes, clientKey);
      }
    }
  }

  /**
   * A request over the prefill and decode pools: the prefill replica computes the prompt and one
   * token ({@code max_tokens} 1, not streamed, {@code "kv_transfer_params": {"do_remote_decode":
   * true}}) and answers with the handle of the pages it published; the decode replica gets the
   * client's own body with that handle and answers the client.
   */
  private void disaggregate(
      HttpExchange exchange, String path, ObjectNode request, long[] hashes, String clientKey)
      throws IOException {
    if (request.has(KV_TRANSFER_PARAMS)) {
      ReplyRelay.error(
          exchange,
          400,
          "invalid_kv_transfer_params",
          "kv_transfer_params is set by the router between its prefill and its decode replica:"
              + " drop it from the request (to hand a prefill replica's handle to a decode"
              + " replica yourself, send it to the decode replica, not through the router)");
      return;
    }
    for (Pool p : List.of(Pool.PREFILL, Pool.DECODE)) {
      // A prefill whose handle no decode replica could take would be work for nothing.
      if (!pools.get(p).anyInRotation()) {
        unavailable(exchange, pools.get(p), null);
        return;
      }
    }
    ObjectNode prefillBody = request.deepCopy();
    if (prefillBody.has("max_completion_tokens")) {
      prefillBody.put("max_completion_tokens", 1);
    }
    if (prefillBody.has("max_tokens") || !prefillBody.has("max_completion_tokens")) {
      prefillBody.put("max_tokens", 1);
    }
    prefillBody.put("stream", false);
    // OpenAI refuses stream_options without stream; the client's go to the decode replica.
    prefillBody.remove("stream_options");
    prefillBody.putObject(KV_TRANSFER_PARAMS).put("do_remote_decode", true);
    long started = System.nanoTime();
    JsonNode handle =
        prefill(exchange, path, BODIES.writeValueAsBytes(prefillBody), hashes, clientKey);
    if (handle == null) {
      return;
    }
    prefillPhase.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
    request.set(KV_TRANSFER_PARAMS, handle);
    forward(
        pools.get(Pool.DECODE),
        exchange,
        path,
        BODIES.writeValueAsBytes(request),
        hashes,
        clientKey);
  }

  /**
   * Sends the prefill request to the best prefill replica, and to the next while one fails it
   * (unreachable, a reply that breaks off or falls silent: taken out of rotation; a status of 500
   * or more: the next one tries). A refusal below 500 goes to the client unchanged.
   *
   * @return the answer's {@code kv_transfer_params}; null if the client was answered instead
   */
  private JsonNode prefill(
      HttpExchange exchange, String path, byte[] body, long[] hashes, String clientKey)
      throws IOException {
    ReplicaPool pool = pools.get(Pool.PREFILL);
    Tries tries = new Tries(pool, hashes);
    while (true) {
      ReplicaPool.Choice choice = tries.next(exchange);
      if (choice == null) {
        return null;
      }
      int r = choice.replica();
      HttpResponse<InputStream> response;
      byte[] answer;
      try {
        response = answer(pool, r, request(pool, r, path, "POST", body, clientKey));
        answer = relay.readWhole(response);
      } catch (ReplyRelay.ReplicaFailedException e) {
        tries.broke(r, e.getCause());
        continue;
      } catch (IOException e) {
        tries.broke(r, e);
        continue;
      } catch (InterruptedException e) {
        stopping(exchange);
        return null;
      } finally {
        pool.done(choice);
      }
      int status = response.statusCode();
      if (status >= 500) {
        tries.failed(r, status, answer);
        continue;
      }
      pool.countRouted(r);
      if (status >= 300) {
        // Refused (a bad body, a full queue): the client learns why, as from a replica.
        pool.index().unrouted(r, hashes);
        ReplyRelay.send(exchange, response, answer);
        return null;
      }
      JsonNode handle = null;
      try {
        JsonNode tree = BODIES.readTree(answer);
        handle = tree == null ? null : tree.get(KV_TRANSFER_PARAMS);
      } catch (IOException e) {
        // Not JSON: no handle either.
      }
      if (handle == null || !handle.isObject()) {
        ReplyRelay.error(
            exchange,
            502,
            "no_kv_transfer_params",
            "the prefill replica "
                + pool.replicas().get(r).http()
                + " answered without an object kv_transfer_params: start it with kvtier serve"
                + " --role prefill (or --role both) of a kvtier that disaggregates");
        return null;
      }
      return handle;
    }
  }

  /**
   * Sends the request to the best replica of the pool, and to the next best while one fails
   * before anything was sent to the client: a refused or reset connection, a reply that breaks
   * off before its end (a whole reply is read before it is passed on), or a stream that breaks
   * off before its first bytes; in the decode pool also a status of 500 or more (the handle is
   * as good at another decode replica). A stream that breaks off later cannot be taken back: the
   * client gets an error event ({@code data: {"error": ...}}, code {@code replica_failed}, no
   * {@code [DONE]}) and the end of the stream.
   */
  private void forward(
      ReplicaPool pool,
      HttpExchange exchange,
      String path,
      byte[] body,
      long[] hashes,
      String clientKey)
      throws IOException {
    boolean decode = pool.pool() == Pool.DECODE;
    long started = System.nanoTime();
    Tries tries = new Tries(pool, hashes);
    while (true) {
      ReplicaPool.Choice choice = tries.next(exchange);
      if (choice == null) {
        return;
      }
      int r = choice.replica();
      try {
        HttpRequest sent = request(pool, r, path, exchange.getRequestMethod(), body, clientKey);
        HttpResponse<InputStream> response = answer(pool, r, sent);
        if (decode && response.statusCode() >= 500) {
          tries.failed(r, response.statusCode(), relay.readWhole(response));
          continue;
        }
        IOException broken;
        try {
          broken =
              relay.relay(
                  exchange,
                  response,
                  () -> {
                    if (decode) {
                      decodeFirstBytes.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
                    }
                  });
        } catch (ReplyRelay.ClientGoneException e) {
          // The client went away: nothing to retry, and nothing wrong with the replica.
          pool.countRouted(r);
          return;
        }
        pool.countRouted(r);
        if (broken != null) {
          pool.markDown(r, broken);
        } else if (response.statusCode() >= 400) {
          // Refused (a full queue, a bad body): it will not cache the prompt.
          pool.index().unrouted(r, hashes);
        } else if (decode) {
          decodePhase.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
        }
        return;
      } catch (ReplyRelay.ReplicaFailedException e) {
        tries.broke(r, e.getCause());
      } catch (IOException e) {
        tries.broke(r, e);
      } catch (InterruptedException e) {
        stopping(exchange);
        return;
      } finally {
        pool.done(choice);
      }
    }
  }

  private HttpRequest request(
      ReplicaPool pool, int r, String path, String method, byte[] body, String clientKey) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(pool.replicas().get(r).http() + path))
            .timeout(options.answerTimeout())
            .header("Content-Type", "application/json");
    if (clientKey != null) {
      // Tenants: the replica learns the tenant from the client's own key.
      request.header("Authorization", clientKey);
    } else {
      options.replicaApiKey().ifPresent(k -> request.header("Authorization", "Bearer " + k));
    }
    request.method(
        method,
        body.length == 0
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofByteArray(body));
    return request.build();
  }

  /**
   * Sends a request to a replica of any pool and waits for its answer's headers: past
   * {@code --replica-read-timeout} without them, and again after each such wait, asks the
   * replica's {@code GET /health}; one that answers is busy (its queue, a long prefill, the
   * publish, a long answer that is not streamed and so sends its headers only at its end) and is
   * waited for, up to {@code --replica-answer-timeout}; one that does not is frozen or gone, and
   * fails the request.
   */
  private HttpResponse<InputStream> answer(ReplicaPool pool, int r, HttpRequest request)
      throws IOException, InterruptedException {
    CompletableFuture<HttpResponse<InputStream>> answer =
        client.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream());
    URI base = pool.replicas().get(r).http();
    while (true) {
      try {
        return answer.get(options.replicaReadTimeout().toNanos(), TimeUnit.NANOSECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof IOException io) {
          throw io;
        }
        throw new IOException(e.getCause());
      } catch (TimeoutException e) {
        if (!ReplicaPool.health(client, base, options.replicaTimeout()).up()) {
          answer.cancel(true);
          throw new IOException(
              "the replica sent nothing for "
                  + options.replicaReadTimeout().toSeconds()
                  + " s (--replica-read-timeout) and does not answer GET /health");
        }
      } catch (InterruptedException e) {
        answer.cancel(true);
        throw e;
      }
    }
  }

  /**
   * One request's tries over a pool, the same for a prefill and a forward: the replicas tried
   * (each at most once), the retries counted, and how the last one failed, for the 503 once no
   * other takes the request.
   */
  private final class Tries {
    private final ReplicaPool pool;
    private final long[] hashes;
    private final boolean[] tried;
    private int attempts;
    private String last;

    Tries(ReplicaPool pool, long[] hashes) {
      this.pool = pool;
      this.hashes = hashes;
      this.tried = new boolean[pool.replicas().size()];
    }

    /**
     * The best replica not tried yet (its {@link ReplicaPool#done} is the caller's), a retry
     * counted after the first; null once none is left and the client got the 503.
     */
    ReplicaPool.Choice next(HttpExchange exchange) throws IOException {
      ReplicaPool.Choice choice = pool.choose(hashes, tried);
      if (choice == null) {
        unavailable(exchange, pool, last);
        return null;
      }
      tried[choice.replica()] = true;
      if (attempts++ > 0) {
        pool.countRetry();
      }
      return choice;
    }

    /** Replica {@code r} broke off or fell silent: out of rotation, the next one tries. */
    void broke(int r, IOException e) {
      pool.markDown(r, e);
      last = describe(r, e.toString());
    }

    /** Replica {@code r} answered a status of 500 or more: it caches nothing, the next one tries. */
    void failed(int r, int status, byte[] answer) {
      pool.index().unrouted(r, hashes);
      last = describe(r, "status " + status + " " + snippet(answer));
    }

    /** How a replica failed a request, for the 503 if no other takes it. */
    private String describe(int r, String what) {
      return pool.pool().option() + " " + pool.replicas().get(r).http() + ": " + what;
    }
  }

  /** The router was interrupted (it is stopping) while a replica had the request. */
  private static void stopping(HttpExchange exchange) throws IOException {
    Thread.currentThread().interrupt();
    ReplyRelay.error(exchange, 503, "interrupted", "the router is stopping");
  }

  /** The start of a replica's error body, for a message. */
  private static String snippet(byte[] body) {
    String text = new String(body, StandardCharsets.UTF_8).strip();
    return text.length() > 300 ? text.substring(0, 300) + "..." : text;
  }

  /** No replica of the pool could take the request: 503, naming the pool and why. */
  private void unavailable(HttpExchange exchange, ReplicaPool pool, String last)
      throws IOException {
    pool.countUnavailable();
    if (pool.pool() == Pool.REPLICA) {
      ReplyRelay.error(exchange, 503, "no_replica", "no replica is reachable; retry later");
      return;
    }
    String misfits = pool.misfits();
    ReplyRelay.error(
        exchange,
        503,
        "no_" + pool.pool().label() + "_replica",
        "no "
            + pool.pool().label()
            + " replica ("
            + pool.pool().option()
            + ") could take the request: "
            + (last == null ? "none is in rotation" : "the last one tried failed, " + last)
            + (misfits.isEmpty() ? "" : "; " + misfits)
            + "; retry later");
  }

  private void checkHealth() {
    while (running) {
      try {
        Thread.sleep(1_000);
      } catch (InterruptedException e) {
        return;
      }
      silence.check();
      for (ReplicaPool pool : pools.values()) {
        pool.checkHealth(client, options.replicaTimeout(), options.replicaApiKey());
      }
    }
  }

  /** Stops serving and following events. */
  @Override
  public void close() {
    running = false;
    server.stop(0);
    health.interrupt();
    pools.values().forEach(ReplicaPool::close);
    executor.shutdownNow();
    registry.close();
  }
}
