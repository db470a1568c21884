package io.kvtier.cli.serve;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.FaultPlan;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.cli.metrics.KvTierMeters;
import io.kvtier.cli.metrics.MicrometerBackendMetrics;
import io.kvtier.cli.model.ModelConfig;
import io.kvtier.cli.model.ModelEngine;
import io.kvtier.cli.model.NoCacheRunner;
import io.kvtier.cli.model.TinyTransformer;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.SeedExtension;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Drives the completion server over real HTTP on a loopback port: completions equal to the
 * uncached reference, cache reuse on a repeated prefix, a 400 for each class of bad input, 404,
 * 405, 429 on a full queue, 503 for a failed load-back, 500 from a failed engine, a metrics
 * scrape that parses, health, and a graceful shutdown.
 */
@ExtendWith(SeedExtension.class)
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CompletionServerTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  /** A Prometheus sample line: name, optional labels, a value. */
  private static final Pattern SAMPLE =
      Pattern.compile(
          "[a-zA-Z_:][a-zA-Z0-9_:]*(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"(\\\\.|[^\"\\\\])*\",?)*\\})?"
              + " [-+]?([0-9.]+([eE][-+]?[0-9]+)?|NaN|Inf)");

  private ModelEngine engine;
  private CompletionServer server;
  private HttpClient client;
  private URI base;

  @BeforeEach
  void start() throws IOException {
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .layout(2, 4, 16, Float.BYTES, 4)
            .devicePages(64)
            .hostPages(256)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(512)
            .build();
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    engine = ModelEngine.open(MODEL, config, new MicrometerBackendMetrics(registry));
    KvTierMeters.bind(registry, engine.stats());
    server =
        CompletionServer.start(
            engine,
            registry,
            new InetSocketAddress("127.0.0.1", 0),
            new CompletionServer.Options(2, 4096, Duration.ofMinutes(1)));
    client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    base = URI.create("http://127.0.0.1:" + server.address().getPort());
  }

  @AfterEach
  void stop() {
    server.close();
    engine.close();
    client.close();
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    return client.send(
        HttpRequest.newBuilder(base.resolve(path))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return client.send(
        HttpRequest.newBuilder(base.resolve(path)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String body(int[] prompt, int maxTokens) {
    return "{\"prompt_tokens\": "
        + java.util.Arrays.toString(prompt)
        + ", \"max_tokens\": "
        + maxTokens
        + "}";
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(HttpResponse<String> response) {
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
    return (Map<String, Object>) StrictJson.parse(response.body());
  }

  private static int[] tokens(Map<?, ?> json) {
    return ((List<?>) json.get("tokens")).stream().mapToInt(t -> (int) (long) (Long) t).toArray();
  }

  @Test
  void completionsEqualTheUncachedReferenceAndReuseARepeatedPrefix(Random random) throws Exception {
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    int[] shared = new int[40];
    for (int i = 0; i < shared.length; i++) {
      shared[i] = random.nextInt(512);
    }
    for (int round = 0; round < 4; round++) {
      int[] prompt = java.util.Arrays.copyOf(shared, 40 + 1 + round);
      for (int i = 40; i < prompt.length; i++) {
        prompt[i] = random.nextInt(512);
      }
      HttpResponse<String> response = post("/v1/completions", body(prompt, 6));

      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      Map<?, ?> json = json(response);
      assertThat(tokens(json)).containsExactly(reference.generate(prompt, 6));
      long cached = (Long) json.get("cached_tokens");
      if (round == 0) {
        assertThat(cached).isZero();
      } else {
        assertThat(cached).as("the shared 40-token prefix is cached").isEqualTo(40);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      not JSON         | {"prompt_tokens": [1, 2]                    | not valid JSON
      not an object    | [1, 2, 3]                                   | must be a JSON object
      no prompt_tokens | {"max_tokens": 3}                           | missing field prompt_tokens
      no max_tokens    | {"prompt_tokens": [1]}                      | missing field max_tokens
      prompt a string  | {"prompt_tokens": "1 2", "max_tokens": 3}   | must be an array
      token a decimal  | {"prompt_tokens": [1, 2.5], "max_tokens": 3} | [1] must be an integer
      token a string   | {"prompt_tokens": ["7"], "max_tokens": 3}   | [0] must be an integer
      max_tokens null  | {"prompt_tokens": [1], "max_tokens": null}  | must be an integer, not null
      unknown field    | {"prompt_tokens": [1], "max_token": 3}      | unknown field "max_token"
      empty prompt     | {"prompt_tokens": [], "max_tokens": 3}      | prompt_tokens is empty
      token 512        | {"prompt_tokens": [1, 512], "max_tokens": 3} | [1]=512 is outside the vocab
      negative token   | {"prompt_tokens": [-1], "max_tokens": 3}    | [0]=-1 is outside the vocab
      huge token       | {"prompt_tokens": [99999999999], "max_tokens": 3} | out of range
      max_tokens 0     | {"prompt_tokens": [1], "max_tokens": 0}     | max_tokens=0 must be at least
      max_tokens -4    | {"prompt_tokens": [1], "max_tokens": -4}    | max_tokens=-4 must be
      too long         | {"prompt_tokens": [1, 2, 3], "max_tokens": 254} | the context limit of 256
      """)
  void eachClassOfBadInputIsA400WithAMessage(String name, String body, String message)
      throws Exception {
    HttpResponse<String> response = post("/v1/completions", body);

    assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
    Map<?, ?> error = (Map<?, ?>) json(response).get("error");
    assertThat(error.get("status")).isEqualTo(400L);
    assertThat((String) error.get("message")).contains(message);
    // The server still serves: a bad request never breaks it.
    assertThat(post("/v1/completions", body(new int[] {5, 6, 7}, 2)).statusCode()).isEqualTo(200);
  }

  @Test
  void invalidUtf8AndOversizedBodiesAreClientErrors() throws Exception {
    HttpResponse<String> utf8 =
        client.send(
            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .POST(
                    HttpRequest.BodyPublishers.ofByteArray(
                        new byte[] {'{', (byte) 0xC3, (byte) 0x28, '}'}))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(utf8.statusCode()).isEqualTo(400);
    assertThat(utf8.body()).contains("not valid UTF-8");

    HttpResponse<String> large = post("/v1/completions", " ".repeat(5000));
    assertThat(large.statusCode()).isEqualTo(413);
    assertThat(large.body()).contains("larger than 4096 bytes");
  }

  @Test
  void unknownPathsAre404AndWrongMethods405WithAllow() throws Exception {
    HttpResponse<String> missing = get("/v1/chat");
    assertThat(missing.statusCode()).isEqualTo(404);
    assertThat(missing.body()).contains("no such path /v1/chat");
    assertThat(post("/v1/completions/x", "{}").statusCode()).isEqualTo(404);

    HttpResponse<String> getCompletions = get("/v1/completions");
    assertThat(getCompletions.statusCode()).isEqualTo(405);
    assertThat(getCompletions.headers().firstValue("Allow")).hasValue("POST");
    HttpResponse<String> postMetrics = post("/metrics", "");
    assertThat(postMetrics.statusCode()).isEqualTo(405);
    assertThat(postMetrics.headers().firstValue("Allow")).hasValue("GET");
  }

  @Test
  void healthAnswersOk() throws Exception {
    HttpResponse<String> health = get("/health");

    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(json(health)).containsEntry("status", "ok").containsEntry("queued", 0L);
  }

  @Test
  void theMetricsScrapeParsesAndCountsHitsPerTier(Random random) throws Exception {
    int[] prompt = new int[30];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = random.nextInt(512);
    }
    assertThat(post("/v1/completions", body(prompt, 3)).statusCode()).isEqualTo(200);
    assertThat(post("/v1/completions", body(prompt, 3)).statusCode()).isEqualTo(200);
    assertThat(post("/v1/completions", "nope").statusCode()).isEqualTo(400);

    HttpResponse<String> scrape = get("/metrics");

    assertThat(scrape.statusCode()).isEqualTo(200);
    assertThat(scrape.headers().firstValue("Content-Type"))
        .hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
    Map<String, Double> samples = new java.util.HashMap<>();
    for (String line : scrape.body().split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      assertThat(line).as("a sample line").matches(SAMPLE);
      int space = line.lastIndexOf(' ');
      samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
    assertThat(samples)
        .containsEntry("kvtier_cache_hits_total{tier=\"device\"}", 28.0)
        .containsEntry("kvtier_requests_total", 2.0)
        .containsEntry("kvtier_tokens_total{kind=\"generated\"}", 6.0)
        .containsEntry("kvtier_pool_capacity{tier=\"device\"}", 64.0)
        .containsKeys(
            "kvtier_cache_hits_total{tier=\"host\"}",
            "kvtier_cache_misses_total{tier=\"host\"}",
            "kvtier_cache_evictions_total{tier=\"device\"}",
            "kvtier_pool_pages{state=\"free\",tier=\"host\"}",
            "kvtier_transfer_bytes_total{direction=\"d2h\"}",
            "kvtier_http_requests_total{route=\"/v1/completions\",status=\"400\"}");
  }

  @Test
  void aFullQueueIs429WithRetryAfterAndQueuedRequestsStillComplete() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<?> paused = server.worker().pause(release);
    while (server.worker().queued() > 0) {
      Thread.onSpinWait(); // until the engine thread holds the pause, not the queue
    }
    List<CompletableFuture<HttpResponse<String>>> queued = new ArrayList<>(2);
    for (int i = 0; i < 2; i++) {
      queued.add(
          client.sendAsync(
              HttpRequest.newBuilder(base.resolve("/v1/completions"))
                  .POST(HttpRequest.BodyPublishers.ofString(body(new int[] {1, 2, i}, 2)))
                  .build(),
              HttpResponse.BodyHandlers.ofString()));
    }
    while (server.worker().queued() < 2) {
      Thread.sleep(1);
    }

    HttpResponse<String> refused = post("/v1/completions", body(new int[] {3}, 2));

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(refused.body()).contains("queue is full");
    release.countDown();
    paused.get(30, TimeUnit.SECONDS);
    assertThat(queued.stream().map(f -> f.join().statusCode()).collect(Collectors.toList()))
        .containsExactly(200, 200);
  }

  @Test
  void closeServesWhatIsQueuedThenRefusesConnections() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    server.worker().pause(release);
    while (server.worker().queued() > 0) {
      Thread.onSpinWait(); // until the engine thread holds the pause: the pause job itself was
      // counted as "queued", so close() could start before the request below was queued
    }
    CompletableFuture<HttpResponse<String>> pending =
        client.sendAsync(
            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .POST(HttpRequest.BodyPublishers.ofString(body(new int[] {9, 8, 7}, 3)))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    while (server.worker().queued() < 1) {
      Thread.sleep(1);
    }
    Thread closing = Thread.ofPlatform().start(server::close);
    release.countDown();
    closing.join();

    assertThat(pending.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(tokens(json(pending.join())))
        .containsExactly(new NoCacheRunner(MODEL).generate(new int[] {9, 8, 7}, 3));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> get("/health"))
        .isInstanceOf(IOException.class);
  }

  /** A server over an engine on given transfers, both closed by the test. */
  private record Rig(ModelEngine engine, CompletionServer server, URI base)
      implements AutoCloseable {

    static Rig start(java.util.function.UnaryOperator<TransferEngine> wrap) throws IOException {
      KvTierConfig config =
          KvTierConfig.builder()
              .device("sim")
              .host("sim")
              .layout(2, 4, 16, Float.BYTES, 4)
              .devicePages(16)
              .hostPages(64)
              .writePolicy(WritePolicy.WRITE_THROUGH)
              .evictionPolicy(EvictionPolicy.LRU)
              .vocabSize(512)
              .build();
      ModelEngine engine = ModelEngine.open(MODEL, config, BackendMetrics.NOOP, s -> s, wrap);
      PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      CompletionServer server =
          CompletionServer.start(
              engine,
              registry,
              new InetSocketAddress("127.0.0.1", 0),
              new CompletionServer.Options(2, 4096, Duration.ofMinutes(1)));
      return new Rig(engine, server, URI.create("http://127.0.0.1:" + server.address().getPort()));
    }

    @Override
    public void close() {
      try {
        server.close();
      } finally {
        engine.close();
      }
    }
  }

  private HttpResponse<String> post(URI at, String body) throws Exception {
    return client.send(
        HttpRequest.newBuilder(at.resolve("/v1/completions"))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /**
   * The engine's rule for a failed load-back (the request ends, no retry) reaches the client as
   * a 503 it may retry; the retry loads the prefix back and gives the uncached output.
   */
  @Test
  void aFailedLoadBackIsA503LoadFailedAndTheRetryIsServed(Random random) throws Exception {
    AtomicReference<FaultyTransferEngine> faulty = new AtomicReference<>();
    try (Rig rig =
        Rig.start(
            t -> {
              faulty.set(new FaultyTransferEngine(t, FaultPlan.none(), TimeSource.SYSTEM));
              return faulty.get();
            })) {
      int[] prompt = new int[40];
      for (int i = 0; i < prompt.length; i++) {
        prompt[i] = random.nextInt(512);
      }
      int[] other = new int[60];
      for (int i = 0; i < other.length; i++) {
        other[i] = random.nextInt(512);
      }
      assertThat(post(rig.base(), body(prompt, 4)).statusCode()).isEqualTo(200);
      // A prompt of the device pool's size evicts the first one's pages, which it can do only
      // once their write-through backups committed: they are on the host now.
      assertThat(post(rig.base(), body(other, 4)).statusCode()).isEqualTo(200);
      faulty.get().failNext(TransferDirection.HOST_TO_DEVICE);

      HttpResponse<String> failed = post(rig.base(), body(prompt, 4));

      assertThat(failed.statusCode()).as(failed.body()).isEqualTo(503);
      assertThat(failed.headers().firstValue("Retry-After")).hasValue("1");
      assertThat(failed.body()).contains("\"load_failed\"").contains("load-back");
      HttpResponse<String> retried = post(rig.base(), body(prompt, 4));
      assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);
      assertThat(tokens(json(retried)))
          .containsExactly(new NoCacheRunner(MODEL).generate(prompt, 4));
      assertThat((Long) json(retried).get("host_cached_tokens")).isPositive();
    }
  }

  /** A failed engine answers every request with a 500 at once: none waits for a dead loop. */
  @Test
  void aFailedEngineIsA500ForEveryRequestNotAHang() throws Exception {
    AtomicBoolean broken = new AtomicBoolean();
    try (Rig rig =
        Rig.start(
            t ->
                new TransferEngine() {
                  @Override
                  public TransferHandle submit(TransferBatch batch) {
                    if (broken.get()) {
                      throw new IllegalStateException("injected: the copy engine broke");
                    }
                    return t.submit(batch);
                  }

                  @Override
                  public int inFlight() {
                    return t.inFlight();
                  }

                  @Override
                  public void close() {
                    t.close();
                  }
                })) {
      assertThat(post(rig.base(), body(new int[] {1, 2, 3, 4, 5, 6}, 3)).statusCode())
          .isEqualTo(200);
      broken.set(true);

      for (int i = 0; i < 2; i++) {
        HttpResponse<String> failed = post(rig.base(), body(new int[] {7, 8, 9, 10, 11, i}, 3));
        assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
        assertThat(failed.body()).contains("internal_error").contains("injected");
      }
    }
  }
}
