package io.kvtier.cli.serve;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvtier.cli.JsonWriter;
import io.kvtier.cli.model.Completion;
import io.kvtier.cli.model.ModelEngine;
import io.kvtier.cli.model.RequestFailedException;
import io.kvtier.core.cache.PoolExhaustedException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The HTTP server of {@code kvtier serve}, on the JDK's {@link HttpServer}:
 *
 * <ul>
 *   <li>{@code POST /v1/completions} with {@code {"prompt_tokens": [...], "max_tokens": n}}
 *       returns {@code {"tokens": [...], "cached_tokens": k}} (plus the device, host and L3
 *       shares of {@code k}: {@code device_cached_tokens}, {@code host_cached_tokens}, {@code
 *       l3_cached_tokens});
 *   <li>{@code GET /metrics}: the Prometheus text exposition of the registry;
 *   <li>{@code GET /health}: {@code {"status": "ok", "queued": n}}.
 * </ul>
 *
 * <p>Every error is a JSON {@code {"error": {"status", "type", "message"}}} with a 4xx status for
 * a client's mistake (400 invalid body or a request beyond the model's limits, 404, 405 with
 * {@code Allow}, 413) and 429 or 503 with {@code Retry-After} when the queue or the cache is full.
 * A handler never lets an exception escape, so a connection always gets an answer. Requests run
 * one at a time on one engine thread ({@link EngineWorker}); HTTP exchanges run on virtual
 * threads, which wait for it.
 */
public final class CompletionServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(CompletionServer.class.getName());

  /**
   * The server's settings.
   *
   * @param queueCapacity requests that may wait for the engine before a 429, at least 1
   * @param maxBodyBytes the largest request body accepted, at least 1
   * @param requestTimeout how long a request may wait and run before a 503
   */
  public record Options(int queueCapacity, int maxBodyBytes, Duration requestTimeout) {
    /** 64 queued requests, bodies up to 1 MiB, 2 minutes per request. */
    public static final Options DEFAULTS = new Options(64, 1 << 20, Duration.ofMinutes(2));

    /** Validates the fields. */
    public Options {
      if (queueCapacity < 1 || maxBodyBytes < 1) {
        throw new IllegalArgumentException(
            "queueCapacity="
                + queueCapacity
                + " and maxBodyBytes="
                + maxBodyBytes
                + " must be >= 1");
      }
      Objects.requireNonNull(requestTimeout, "requestTimeout");
    }
  }

  private final HttpServer http;
  private final ExecutorService exchanges;
  private final EngineWorker worker;
  private final ModelEngine engine;
  private final PrometheusMeterRegistry registry;
  private final Options options;
  private boolean closed;

  private CompletionServer(
      HttpServer http, ModelEngine engine, PrometheusMeterRegistry registry, Options options) {
    this.http = http;
    this.engine = engine;
    this.registry = registry;
    this.options = options;
    this.exchanges = Executors.newVirtualThreadPerTaskExecutor();
    this.worker = new EngineWorker(engine, options.queueCapacity());
  }

  /**
   * Binds and starts a server; its engine thread drives {@code engine} from now on.
   *
   * @param engine the engine; the caller closes it after {@link #close()}
   * @param registry the registry {@code /metrics} scrapes
   * @param address where to listen; port 0 picks a free port
   * @param options the settings
   * @return the running server
   * @throws IOException if the address cannot be bound
   */
  public static CompletionServer start(
      ModelEngine engine,
      PrometheusMeterRegistry registry,
      InetSocketAddress address,
      Options options)
      throws IOException {
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(address, "address");
    Objects.requireNonNull(options, "options");
    HttpServer http = HttpServer.create(address, 0);
    CompletionServer server = new CompletionServer(http, engine, registry, options);
    http.createContext("/", server::handle);
    http.setExecutor(server.exchanges);
    http.start();
    return server;
  }

  /**
   * The bound address, with the actual port.
   *
   * @return the address
   */
  public InetSocketAddress address() {
    return http.getAddress();
  }

  /** The engine thread and its queue, for tests in this package. */
  EngineWorker worker() {
    return worker;
  }

  private void handle(HttpExchange exchange) {
    int status = 500;
    try (exchange) {
      try {
        status = route(exchange);
      } catch (ApiException e) {
        status = e.status();
        sendError(exchange, e);
      } catch (RuntimeException | Error e) {
        LOG.log(
            System.Logger.Level.ERROR,
            "internal error serving "
                + exchange.getRequestMethod()
                + " "
                + exchange.getRequestURI(),
            e);
        sendError(
            exchange,
            new ApiException(500, "internal_error", "internal error: " + e, OptionalInt.empty()));
      }
    } catch (IOException e) {
      // The client went away while we answered: nothing left to tell it.
      LOG.log(System.Logger.Level.DEBUG, "exchange failed", e);
    } finally {
      count(exchange.getRequestURI().getPath(), status);
    }
  }

  private void count(String path, int status) {
    String route =
        switch (path) {
          case "/v1/completions", "/metrics", "/health" -> path;
          default -> "other";
        };
    Counter.builder("kvtier.http.requests")
        .description("HTTP requests by route and status")
        .tag("route", route)
        .tag("status", Integer.toString(status))
        .register(registry)
        .increment();
  }

  private int route(HttpExchange exchange) throws IOException {
    String path = exchange.getRequestURI().getPath();
    return switch (path) {
      case "/v1/completions" -> {
        allow(exchange, "POST");
        yield complete(exchange);
      }
      case "/metrics" -> {
        allow(exchange, "GET");
        exchange
            .getResponseHeaders()
            .set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        yield send(exchange, 200, registry.scrape().getBytes(StandardCharsets.UTF_8));
      }
      case "/health" -> {
        allow(exchange, "GET");
        String body =
            new JsonWriter()
                .beginObject()
                .name("status")
                .value("ok")
                .name("queued")
                .value(worker.queued())
                .name("requests")
                .value(engine.stats().requests())
                .endObject()
                .toJson();
        yield sendJson(exchange, 200, body);
      }
      default ->
          throw new ApiException(
              404,
              "not_found",
              "no such path " + path + ": use POST /v1/completions, GET /metrics or GET /health",
              OptionalInt.empty());
    };
  }

  private static void allow(HttpExchange exchange, String allowed) {
    String method = exchange.getRequestMethod();
    if (!method.equals(allowed)) {
      exchange.getResponseHeaders().set("Allow", allowed);
      throw new ApiException(
          405,
          "method_not_allowed",
          method + " " + exchange.getRequestURI().getPath() + " is not allowed: use " + allowed,
          OptionalInt.empty());
    }
  }

  private int complete(HttpExchange exchange) throws IOException {
    CompletionRequest request = CompletionRequest.parse(readBody(exchange));
    request.check(engine.model().config().vocabSize(), engine.contextLimit());
    CompletableFuture<Completion> future = worker.submit(request);
    Completion c;
    try {
      c = future.get(options.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(false);
      throw new ApiException(
          503,
          "timeout",
          "the request did not finish within "
              + options.requestTimeout()
              + ": the server is overloaded, retry later",
          OptionalInt.of(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ApiException(
          503, "shutting_down", "the server is shutting down", OptionalInt.empty());
    } catch (ExecutionException e) {
      throw translate(e.getCause());
    }
    JsonWriter json = new JsonWriter().beginObject().name("tokens").beginArray();
    for (int t : c.tokens()) {
      json.value(t);
    }
    String body =
        json.endArray()
            .name("cached_tokens")
            .value(c.cachedTokens())
            .name("device_cached_tokens")
            .value(c.deviceHitTokens())
            .name("host_cached_tokens")
            .value(c.hostHitTokens())
            .name("l3_cached_tokens")
            .value(c.l3HitTokens())
            .endObject()
            .toJson();
    return sendJson(exchange, 200, body);
  }

  private static RuntimeException translate(Throwable failure) {
    return switch (failure) {
      case ApiException e -> e;
      case PoolExhaustedException e ->
          new ApiException(
              503, "cache_full", "the KV cache is full: " + e.getMessage(), OptionalInt.of(1));
      case RequestFailedException e ->
          switch (e.outcome()) {
            case REJECTED ->
                new ApiException(
                    503,
                    "cache_full",
                    "the KV cache cannot hold the request: " + e.getMessage(),
                    OptionalInt.empty());
            case LOAD_FAILED ->
                new ApiException(503, "load_failed", e.getMessage(), OptionalInt.of(1));
            default -> new ApiException(503, "aborted", e.getMessage(), OptionalInt.of(1));
          };
      case IllegalArgumentException e -> ApiException.badRequest(e.getMessage());
      case RuntimeException e -> e;
      default -> new IllegalStateException("the engine failed: " + failure, failure);
    };
  }

  private String readBody(HttpExchange exchange) throws IOException {
    byte[] bytes;
    try (InputStream in = exchange.getRequestBody()) {
      bytes = in.readNBytes(options.maxBodyBytes() + 1);
    }
    if (bytes.length > options.maxBodyBytes()) {
      throw new ApiException(
          413,
          "body_too_large",
          "the body is larger than " + options.maxBodyBytes() + " bytes",
          OptionalInt.empty());
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(java.nio.ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw ApiException.badRequest("the body is not valid UTF-8");
    }
  }

  private static void sendError(HttpExchange exchange, ApiException e) throws IOException {
    e.retryAfterSeconds()
        .ifPresent(s -> exchange.getResponseHeaders().set("Retry-After", Integer.toString(s)));
    String body =
        new JsonWriter()
            .beginObject()
            .name("error")
            .beginObject()
            .name("status")
            .value(e.status())
            .name("type")
            .value(e.type())
            .name("message")
            .value(e.getMessage())
            .endObject()
            .endObject()
            .toJson();
    sendJson(exchange, e.status(), body);
  }

  private static int sendJson(HttpExchange exchange, int status, String body) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    return send(exchange, status, body.getBytes(StandardCharsets.UTF_8));
  }

  private static int send(HttpExchange exchange, int status, byte[] body) throws IOException {
    exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
    return status;
  }

  /**
   * Refuses new requests (503), serves the queued ones, waits for the engine's copies, then stops
   * the listener, letting the last answers go out (up to a second). Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    // The worker first: it refuses new requests (503) and serves the queued ones while their
    // exchanges are still open to carry the answers; then the listener stops.
    worker.close();
    http.stop(1);
    exchanges.shutdown();
    try {
      exchanges.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
