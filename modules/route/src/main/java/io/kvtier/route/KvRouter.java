package io.kvtier.route;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.hazelcast.core.HazelcastInstance;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvtier.core.cache.PageHasher;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.spi.PageKey;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

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
 */
public final class KvRouter implements AutoCloseable {
  /** Reads request bodies into maps, lists and numbers: only to find the prompt to route. */
  private static final ObjectMapper BODIES = new ObjectMapper();

  /**
   * How long a routed prompt's blocks count as cached at its replica before its events confirm
   * them ({@link PrefixIndex#routed}): longer than a request waits in a loaded replica's queue.
   */
  private static final long PREDICTION_NANOS = 30_000_000_000L;

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
      PromptTokens prompts) {

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
          PromptTokens.BYTES);
    }

    /**
     * These options with tenants and the replicas' namespaces.
     *
     * @param keys the key file's keys, or empty
     * @param cacheNamespaces the replicas' secret and shared salt
     * @return the options
     */
    public Options withTenants(Optional<ApiKeys> keys, CacheNamespaces cacheNamespaces) {
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
          prompts);
    }

    /**
     * These options with the replicas' model's text: how a prompt becomes the token ids they
     * cache ({@link PromptTokens#BYTES} for the tiny transformer, the default).
     *
     * @param modelText the reader of the replicas' model
     * @return the options
     */
    public Options withPrompts(PromptTokens modelText) {
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
          tenants,
          namespaces,
          modelText);
    }

    /** The keys clients are checked against. */
    ApiKeys keys() {
      return tenants.orElseGet(() -> apiKey.map(ApiKeys::single).orElse(ApiKeys.open()));
    }
  }

  private final List<ReplicaSpec> replicas;
  private final Options options;
  private final PrefixIndex index;
  private final ApiKeys keys;
  private final List<ReplicaEventSource> events = new ArrayList<>();
  private final boolean[] healthy;
  private final long[] loadBlocks;
  private final long[] inFlight;
  private final AtomicLong[] routed;
  private final AtomicLong retries = new AtomicLong();
  private final SilenceWatch silence;
  private final ReplyRelay relay;
  private final AtomicLong[] failures;
  private final HttpClient client;
  private final HttpServer server;
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private final Thread health;
  private volatile boolean running = true;
  private long turn;

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
    Objects.requireNonNull(hazelcast, "hazelcast");
    for (ReplicaSpec spec : replicas) {
      if (spec.ringbuffer().isPresent() && hazelcast.isEmpty()) {
        throw new IllegalArgumentException(
            "--replica "
                + spec.http()
                + ","
                + spec.events()
                + " reads a Hazelcast ringbuffer: give the cluster (--hazelcast-addresses)");
      }
    }
    this.replicas = List.copyOf(replicas);
    this.options = Objects.requireNonNull(options, "options");
    this.keys = options.keys();
    this.index = new PrefixIndex(this.replicas.size());
    this.healthy = new boolean[this.replicas.size()];
    this.loadBlocks = new long[this.replicas.size()];
    this.inFlight = new long[this.replicas.size()];
    this.routed = new AtomicLong[this.replicas.size()];
    this.failures = new AtomicLong[this.replicas.size()];
    Arrays.fill(healthy, true);
    for (int r = 0; r < this.replicas.size(); r++) {
      routed[r] = new AtomicLong();
      failures[r] = new AtomicLong();
      ReplicaSpec spec = this.replicas.get(r);
      int replica = r;
      events.add(
          spec.ringbuffer()
              .<ReplicaEventSource>map(
                  name ->
                      new HazelcastReplicaEvents(
                          replica, hazelcast.orElseThrow().getRingbuffer(name), index))
              .orElseGet(() -> new ReplicaEvents(replica, spec.events(), spec.replay(), index)));
    }
    this.silence = new SilenceWatch(options.replicaReadTimeout().toNanos());
    this.relay = new ReplyRelay(silence, options.replicaReadTimeout());
    this.client =
        HttpClient.newBuilder().connectTimeout(options.replicaTimeout()).executor(executor).build();
    this.server = HttpServer.create(new InetSocketAddress(options.bind(), options.port()), 0);
    server.setExecutor(executor);
    server.createContext("/v1/completions", e -> handle(e, "/v1/completions"));
    server.createContext("/v1/chat/completions", e -> handle(e, "/v1/chat/completions"));
    server.createContext("/v1/models", e -> handle(e, "/v1/models"));
    server.start();
    this.health = Thread.ofPlatform().daemon().name("kvtier-route-health").start(this::checkHealth);
  }

  /** The port the router listens on. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** The index the events fill. */
  public PrefixIndex index() {
    return index;
  }

  /** Requests sent to each replica (the last try of each). */
  public long[] routed() {
    return Arrays.stream(routed).mapToLong(AtomicLong::get).toArray();
  }

  /** Requests the router has sent to each replica and not yet seen answered. */
  public synchronized long[] inFlight() {
    return inFlight.clone();
  }

  /** Times each replica was found failing and taken out of rotation. */
  public long[] failures() {
    return Arrays.stream(failures).mapToLong(AtomicLong::get).toArray();
  }

  /** Requests sent again to another replica after one could not be reached. */
  public long retries() {
    return retries.get();
  }

  /** Whether each replica is in rotation. */
  public synchronized boolean[] healthy() {
    return healthy.clone();
  }

  /** Batches of events applied per replica. */
  public long[] eventBatches() {
    return events.stream().mapToLong(ReplicaEventSource::applied).toArray();
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

  /**
   * The replica for a prompt, not one of {@code tried}, and the load the request adds there (its
   * prompt blocks that replica does not cache, at least 1); null if none is in rotation.
   */
  synchronized Choice choose(long[] hashes, boolean[] tried) {
    int[][] match = index.match(hashes);
    int best = -1;
    double bestScore = Double.NEGATIVE_INFINITY;
    int n = replicas.size();
    long start = turn++;
    for (int k = 0; k < n; k++) {
      int r = (int) ((start + k) % n);
      if (!healthy[r] || tried[r]) {
        continue;
      }
      if (options.policy() == RoutePolicy.ROUND_ROBIN) {
        best = r;
        break;
      }
      double s = options.score().score(match[r][0], match[r][1], loadBlocks[r]);
      if (best < 0 || s > bestScore || (s == bestScore && loadBlocks[r] < loadBlocks[best])) {
        best = r;
        bestScore = s;
      }
    }
    if (best < 0) {
      return null;
    }
    long load = Math.max(1, hashes.length - match[best][0] - match[best][1]);
    index.routed(best, hashes, System.nanoTime() + PREDICTION_NANOS);
    loadBlocks[best] += load;
    inFlight[best]++;
    return new Choice(best, load);
  }

  /** A replica chosen and the load the request adds to it until it is answered. */
  record Choice(int replica, long load) {}

  private synchronized void done(Choice c) {
    loadBlocks[c.replica()] -= c.load();
    inFlight[c.replica()]--;
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
      if (post) {
        try {
          if (BODIES.readValue(body, Object.class) instanceof Map<?, ?> m) {
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
        }
      }
      forward(exchange, path, body, hashes, options.tenants().isPresent() ? header : null);
    }
  }

  /**
   * Sends the request to the best replica, and to the next best while one fails before anything
   * was sent to the client: a refused or reset connection, a reply that breaks off before its end
   * (a whole reply is read before it is passed on), or a stream that breaks off before its first
   * bytes. A stream that breaks off later cannot be taken back: the client gets an error event
   * ({@code data: {"error": ...}}, code {@code replica_failed}, no {@code [DONE]}) and the end of
   * the stream.
   */
  private void forward(
      HttpExchange exchange, String path, byte[] body, long[] hashes, String clientKey)
      throws IOException {
    boolean[] tried = new boolean[replicas.size()];
    for (int attempt = 0; ; attempt++) {
      Choice choice = choose(hashes, tried);
      if (choice == null) {
        ReplyRelay.error(exchange, 503, "no_replica", "no replica is reachable; retry later");
        return;
      }
      int r = choice.replica();
      tried[r] = true;
      if (attempt > 0) {
        retries.incrementAndGet();
      }
      try {
        HttpRequest.Builder request =
            HttpRequest.newBuilder(URI.create(replicas.get(r).http() + path))
                .timeout(options.replicaReadTimeout())
                .header("Content-Type", "application/json");
        if (clientKey != null) {
          // Tenants: the replica learns the tenant from the client's own key.
          request.header("Authorization", clientKey);
        } else {
          options.replicaApiKey().ifPresent(k -> request.header("Authorization", "Bearer " + k));
        }
        request.method(
            exchange.getRequestMethod(),
            body.length == 0
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(body));
        try {
          HttpResponse<InputStream> response =
              client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
          IOException broken = relay.relay(exchange, response);
          routed[r].incrementAndGet();
          if (broken != null) {
            markDown(r, broken);
          } else if (response.statusCode() >= 400) {
            // Refused (a full queue, a bad body): it will not cache the prompt.
            index.unrouted(r, hashes);
          }
          return;
        } catch (ReplyRelay.ReplicaFailedException e) {
          markDown(r, e.getCause());
          continue;
        } catch (IOException e) {
          markDown(r, e);
          continue;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          ReplyRelay.error(exchange, 503, "interrupted", "the router is stopping");
          return;
        }
      } finally {
        done(choice);
      }
    }
  }

  private synchronized void markDown(int r, IOException e) {
    if (healthy[r]) {
      LOG.log(
          System.Logger.Level.WARNING,
          "replica " + r + " (" + replicas.get(r).http() + ") unreachable, out of rotation: " + e);
      healthy[r] = false;
      failures[r].incrementAndGet();
      events.get(r).forget();
      index.clear(r);
    }
  }

  private void checkHealth() {
    while (running) {
      try {
        Thread.sleep(1_000);
      } catch (InterruptedException e) {
        return;
      }
      silence.check();
      for (int r = 0; r < replicas.size(); r++) {
        boolean down;
        synchronized (this) {
          down = !healthy[r];
        }
        if (down && answers(r)) {
          synchronized (this) {
            healthy[r] = true;
          }
          events.get(r).resume();
          LOG.log(System.Logger.Level.INFO, "replica " + r + " answers again, back in rotation");
        }
      }
    }
  }

  private boolean answers(int r) {
    try {
      HttpRequest.Builder request =
          HttpRequest.newBuilder(URI.create(replicas.get(r).http() + "/v1/models"))
              .timeout(options.replicaTimeout());
      options.replicaApiKey().ifPresent(k -> request.header("Authorization", "Bearer " + k));
      client.send(request.GET().build(), HttpResponse.BodyHandlers.discarding());
      return true;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Stops serving and following events. */
  @Override
  public void close() {
    running = false;
    server.stop(0);
    health.interrupt();
    for (ReplicaEventSource e : events) {
      e.close();
    }
    executor.shutdownNow();
  }
}
