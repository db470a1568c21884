package io.kvtier.server;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvtier.core.tenant.ApiKeys;
import io.kvtier.core.tenant.CacheNamespaces;
import io.kvtier.metrics.ServeMeters;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.ModelText;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The HTTP server of {@code kvtier serve}: OpenAI's API over a {@link GenerationEngine}.
 *
 * <ul>
 *   <li>{@code POST /v1/completions} and {@code POST /v1/chat/completions}, streamed as
 *       server-sent events with {@code "stream": true} ({@link Completions});
 *   <li>{@code GET /v1/models}, {@code GET /v1/models/{id}}: the one model served, its {@code id}
 *       the served name and its {@code root} the model's own ({@link ModelText#name()});
 *   <li>{@code GET /metrics}: the Prometheus text exposition of the registry;
 *   <li>{@code GET} or {@code HEAD /health}: {@code {"status": "ok", ...}}.
 * </ul>
 *
 * <p>Every error is OpenAI's {@code {"error": {"message", "type", "param", "code"}}}: 400 for a
 * malformed body or a request beyond the model's limits (with the field in {@code param}), 401
 * without the API key, 404, 405 with {@code Allow}, 408 for a body that stopped arriving, 413, 429
 * and 503 with {@code Retry-After} when the engine's queue is full or it cannot serve now. A
 * handler never lets an exception escape, so a connection always gets an answer.
 *
 * <p>Why Jetty and not the JDK's {@code HttpServer}: the JDK server's only read timeout is a
 * JVM-wide system property ({@code sun.net.httpserver.maxReqTime}) that closes the connection
 * without an answer, so a silent half-sent body could not be told apart per server nor answered.
 * Jetty's per-connector idle timeout fails a stalled read (answered 408) or write (the stream is
 * cancelled), reports a body shorter than its {@code Content-Length} (answered 400), and streams
 * with explicit flushes. Exchanges run on virtual threads; they wait for the engine, never hold
 * it.
 */
public final class CompletionServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(CompletionServer.class.getName());

  // Jetty announces its version and each start at INFO; the serve line says what matters. Held
  // here: java.util.logging keeps loggers weakly, and a collected one forgets its level.
  private static final java.util.logging.Logger JETTY_LOG =
      java.util.logging.Logger.getLogger("org.eclipse.jetty");

  static {
    JETTY_LOG.setLevel(java.util.logging.Level.WARNING);
  }

  /**
   * The server's settings.
   *
   * @param modelName the model id the API serves ({@code /v1/models}); requests must name it
   * @param apiKey the key every {@code /v1} request must send as {@code Authorization: Bearer};
   *     empty: no key
   * @param maxBodyBytes the largest request body accepted, at least 1
   * @param readTimeout how long a connection may stay silent while the server reads from it or
   *     writes to it
   * @param requestTimeout how long a request may wait and run before a 503
   * @param layerMix the model's layer mix as {@code /v1/models} reports it ({@code
   *     kvtier.layers}), or empty to report none
   * @param tenants the keys of a key file ({@code --api-key-file}), each naming its tenant;
   *     empty: {@code apiKey} alone, all requests the default tenant. Not with {@code apiKey}
   * @param namespaces how a request's tenant and {@code cache_salt} choose its cache namespace
   * @param transfers the replica's role in prefill/decode disaggregation and what a transfer
   *     handle must match ({@link TransferSettings#NONE}: serves everything, takes no handles)
   */
  public record Options(
      String modelName,
      Optional<String> apiKey,
      int maxBodyBytes,
      Duration readTimeout,
      Duration requestTimeout,
      Optional<String> layerMix,
      Optional<ApiKeys> tenants,
      CacheNamespaces namespaces,
      TransferSettings transfers) {
    /** The model id served by default. */
    public static final String DEFAULT_MODEL = "kvtier-tiny";

    /** Model {@code kvtier-tiny}, no key, bodies up to 1 MiB, 30 s silence, 2 minutes a request. */
    public static final Options DEFAULTS =
        new Options(
            DEFAULT_MODEL,
            Optional.empty(),
            1 << 20,
            Duration.ofSeconds(30),
            Duration.ofMinutes(2));

    /** Validates the fields. */
    public Options {
      Objects.requireNonNull(modelName, "modelName");
      Objects.requireNonNull(apiKey, "apiKey");
      Objects.requireNonNull(readTimeout, "readTimeout");
      Objects.requireNonNull(requestTimeout, "requestTimeout");
      Objects.requireNonNull(layerMix, "layerMix");
      Objects.requireNonNull(tenants, "tenants");
      Objects.requireNonNull(namespaces, "namespaces");
      Objects.requireNonNull(transfers, "transfers");
      if (apiKey.isPresent() && tenants.isPresent()) {
        throw new IllegalArgumentException("give one API key or a key file of tenants, not both");
      }
      if (modelName.isBlank() || maxBodyBytes < 1) {
        throw new IllegalArgumentException(
            "modelName=\""
                + modelName
                + "\" must not be blank and maxBodyBytes="
                + maxBodyBytes
                + " must be >= 1");
      }
      if (apiKey.isPresent() && apiKey.get().isEmpty()) {
        throw new IllegalArgumentException("the API key is empty: give one, or none");
      }
      if (readTimeout.isNegative() || readTimeout.isZero() || requestTimeout.isNegative()) {
        throw new IllegalArgumentException(
            "readTimeout="
                + readTimeout
                + " and requestTimeout="
                + requestTimeout
                + " must be > 0");
      }
    }

    /**
     * These options with a role in prefill/decode disaggregation.
     *
     * @param settings the role and what a handle must match
     * @return the options
     */
    public Options withTransfers(TransferSettings settings) {
      return with(apiKey, tenants, namespaces, settings);
    }

    /**
     * Options that report no layer mix.
     *
     * @param modelName the model id the API serves ({@code /v1/models}); requests must name it
     * @param apiKey the key every {@code /v1} request must send as {@code Authorization: Bearer};
     *     empty: no key
     * @param maxBodyBytes the largest request body accepted, at least 1
     * @param readTimeout how long a connection may stay silent while the server reads from it or
     *     writes to it
     * @param requestTimeout how long a request may wait and run before a 503
     */
    public Options(
        String modelName,
        Optional<String> apiKey,
        int maxBodyBytes,
        Duration readTimeout,
        Duration requestTimeout) {
      this(modelName, apiKey, maxBodyBytes, readTimeout, requestTimeout, Optional.empty());
    }

    /**
     * Options without tenants: every request is the default tenant, its namespace chosen by its
     * {@code cache_salt} alone, under a secret made at start.
     *
     * @param modelName the model id the API serves ({@code /v1/models}); requests must name it
     * @param apiKey the key every {@code /v1} request must send as {@code Authorization: Bearer};
     *     empty: no key
     * @param maxBodyBytes the largest request body accepted, at least 1
     * @param readTimeout how long a connection may stay silent while the server reads from it or
     *     writes to it
     * @param requestTimeout how long a request may wait and run before a 503
     * @param layerMix the model's layer mix as {@code /v1/models} reports it, or empty
     */
    public Options(
        String modelName,
        Optional<String> apiKey,
        int maxBodyBytes,
        Duration readTimeout,
        Duration requestTimeout,
        Optional<String> layerMix) {
      this(
          modelName,
          apiKey,
          maxBodyBytes,
          readTimeout,
          requestTimeout,
          layerMix,
          Optional.empty(),
          CacheNamespaces.random(Optional.empty()),
          TransferSettings.NONE);
    }

    /**
     * These options with another API key.
     *
     * @param key the key, or empty
     * @return the options
     */
    public Options withApiKey(Optional<String> key) {
      return with(key, tenants, namespaces, transfers);
    }

    /**
     * These options with tenants: the keys of a key file (replacing any single key) and the
     * namespaces their requests are cached in.
     *
     * @param keys the key file's keys, or empty for the single key or none
     * @param cacheNamespaces how tenant and {@code cache_salt} choose a namespace
     * @return the options
     */
    public Options withTenants(Optional<ApiKeys> keys, CacheNamespaces cacheNamespaces) {
      return with(keys.isPresent() ? Optional.empty() : apiKey, keys, cacheNamespaces, transfers);
    }

    /** These options with other keys, namespaces and transfer settings. */
    private Options with(
        Optional<String> key,
        Optional<ApiKeys> keys,
        CacheNamespaces cacheNamespaces,
        TransferSettings settings) {
      return new Options(
          modelName,
          key,
          maxBodyBytes,
          readTimeout,
          requestTimeout,
          layerMix,
          keys,
          cacheNamespaces,
          settings);
    }

    /** The keys requests are checked against. */
    ApiKeys keys() {
      return tenants.orElseGet(() -> apiKey.map(ApiKeys::single).orElse(ApiKeys.open()));
    }
  }

  private final Server jetty;
  private final ServerConnector connector;
  private final GenerationEngine engine;
  private final PrometheusMeterRegistry registry;
  private final ServeMeters meters;
  private final Options options;
  private final Completions completions;
  private final ApiKeys keys;
  private final long created = Instant.now().getEpochSecond();
  private final AtomicInteger active = new AtomicInteger();
  private final CompletableFuture<ApiException> failure = new CompletableFuture<>();
  private volatile boolean closing;
  private volatile InetSocketAddress bound;
  private boolean closed;

  private CompletionServer(
      GenerationEngine engine,
      PrometheusMeterRegistry registry,
      InetSocketAddress address,
      Options options) {
    this.engine = engine;
    this.registry = registry;
    this.options = options;
    this.meters = ServeMeters.register(registry);
    this.completions = new Completions(engine, meters, options, failure::complete);
    this.keys = options.keys();
    QueuedThreadPool threads = new QueuedThreadPool();
    threads.setName("kvtier-http");
    threads.setVirtualThreadsExecutor(Executors.newVirtualThreadPerTaskExecutor());
    this.jetty = new Server(threads);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendXPoweredBy(false);
    this.connector = new ServerConnector(jetty, new HttpConnectionFactory(http));
    connector.setHost(address.getAddress().getHostAddress());
    connector.setPort(address.getPort());
    connector.setIdleTimeout(options.readTimeout().toMillis());
    jetty.addConnector(connector);
    jetty.setHandler(
        new Handler.Abstract() {
          @Override
          public boolean handle(Request request, Response response, Callback callback) {
            CompletionServer.this.handle(request, response, callback);
            return true;
          }
        });
    // Errors Jetty answers itself (a malformed request line, headers too large) in the API's shape.
    jetty.setErrorHandler(
        (request, response, callback) -> {
          int status = response.getStatus() >= 400 ? response.getStatus() : 400;
          Object message = request.getAttribute(ErrorHandler.ERROR_MESSAGE);
          sendError(
              request,
              response,
              callback,
              ApiException.client(
                  status,
                  "bad_http",
                  "the HTTP request was not understood: " + (message == null ? status : message)));
          return true;
        });
    // close() has already waited for the running exchanges; idle keep-alive connections go at once.
    jetty.setStopTimeout(100);
  }

  /**
   * Binds and starts a server.
   *
   * @param engine the engine; the caller closes it after {@link #close()}
   * @param registry the registry {@code /metrics} scrapes; the server adds its request meters
   * @param address where to listen, resolved; port 0 picks a free port
   * @param options the settings
   * @return the running server
   * @throws IOException if the address cannot be bound (a {@link java.net.BindException} cause
   *     when it is in use)
   */
  public static CompletionServer start(
      GenerationEngine engine,
      PrometheusMeterRegistry registry,
      InetSocketAddress address,
      Options options)
      throws IOException {
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(address, "address");
    Objects.requireNonNull(options, "options");
    if (address.isUnresolved()) {
      throw new IllegalArgumentException(
          "the address " + address.getHostString() + " is not resolved: give an IP address");
    }
    CompletionServer server = new CompletionServer(engine, registry, address, options);
    try {
      server.jetty.start();
    } catch (IOException e) {
      stopQuietly(server.jetty);
      throw e;
    } catch (Exception e) {
      stopQuietly(server.jetty);
      throw new IOException("cannot start the HTTP server on " + address + ": " + e, e);
    }
    server.bound = new InetSocketAddress(address.getAddress(), server.connector.getLocalPort());
    return server;
  }

  private static void stopQuietly(Server jetty) {
    try {
      jetty.stop();
    } catch (Exception e) {
      LOG.log(System.Logger.Level.DEBUG, "stopping a server that did not start", e);
    }
  }

  /**
   * The bound address, with the actual port.
   *
   * @return the address
   */
  public InetSocketAddress address() {
    return bound;
  }

  private void handle(Request request, Response response, Callback callback) {
    String path = request.getHttpURI().getPath();
    int status = 500;
    active.incrementAndGet();
    // A request waiting for the engine does no I/O; only stalled reads and writes time out.
    request.addIdleTimeoutListener(timeout -> false);
    try {
      try {
        status = route(path, request, response, callback);
      } catch (ApiException e) {
        status = e.status();
        sendError(request, response, callback, e);
      } catch (RuntimeException | Error e) {
        LOG.log(
            System.Logger.Level.ERROR,
            "internal error serving " + request.getMethod() + " " + path,
            e);
        sendError(
            request,
            response,
            callback,
            new ApiException(
                500,
                ApiException.SERVER_ERROR,
                "internal_error",
                Optional.empty(),
                "internal error: " + e,
                OptionalInt.empty()));
      }
    } catch (IOException e) {
      // The client went away while we answered: nothing left to tell it.
      LOG.log(System.Logger.Level.DEBUG, "exchange failed", e);
      callback.failed(e);
    } finally {
      active.decrementAndGet();
      count(path, status);
    }
  }

  private void count(String path, int status) {
    String route =
        switch (path) {
          case "/v1/completions", "/v1/chat/completions", "/v1/models", "/metrics", "/health" ->
              path;
          default -> path.startsWith("/v1/models/") ? "/v1/models/{id}" : "other";
        };
    Counter.builder("kvtier.http.requests")
        .description("HTTP requests answered, by route and status code")
        .tag("route", route)
        .tag("status", Integer.toString(status))
        .register(registry)
        .increment();
  }

  private int route(String path, Request request, Response response, Callback callback)
      throws IOException {
    String tenant = path.startsWith("/v1/") ? authorize(request) : ApiKeys.DEFAULT_TENANT;
    return switch (path) {
      case "/v1/completions", "/v1/chat/completions" -> {
        allow(request, response, "POST");
        if (closing) {
          throw ApiException.unavailable(
              "shutting_down", "the server is shutting down", OptionalInt.empty());
        }
        com.fasterxml.jackson.databind.JsonNode body = ApiJson.parse(readBody(request));
        CompletionRequest parsed =
            path.equals("/v1/completions")
                ? CompletionRequest.parse(body, engine.text())
                : ChatRequest.parse(body, engine.text());
        if (!parsed.model().equals(options.modelName())) {
          throw modelNotFound(parsed.model());
        }
        long namespace = options.namespaces().namespace(tenant, parsed.cacheSalt());
        KvTransfer transfer =
            KvTransfer.of(
                body, options.transfers(), options.modelName(), parsed.prompts(), namespace);
        yield completions.serve(
            parsed, namespace, transfer, new Reply.JettyReply(request, response, callback));
      }
      case "/v1/models" -> {
        allow(request, response, "GET");
        ObjectNode list = ApiJson.object().put("object", "list");
        list.putArray("data").add(model());
        yield sendJson(request, response, callback, 200, ApiJson.write(list));
      }
      case "/metrics" -> {
        allow(request, response, "GET", "HEAD");
        response
            .getHeaders()
            .put(HttpHeader.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
        yield send(request, response, callback, 200, registry.scrape());
      }
      case "/health" -> {
        allow(request, response, "GET", "HEAD");
        ObjectNode health =
            ApiJson.object()
                .put("status", closing ? "stopping" : "ok")
                .put("running", meters.running())
                .put("waiting", meters.waiting())
                .put("role", options.transfers().role().configName());
        yield sendJson(request, response, callback, closing ? 503 : 200, ApiJson.write(health));
      }
      default -> {
        if (path.startsWith("/v1/models/")) {
          allow(request, response, "GET");
          String id = path.substring("/v1/models/".length());
          if (!id.equals(options.modelName())) {
            throw modelNotFound(id);
          }
          yield sendJson(request, response, callback, 200, ApiJson.write(model()));
        }
        throw ApiException.client(
            404,
            "not_found",
            "no such path "
                + path
                + ": use POST /v1/completions, POST /v1/chat/completions, GET /v1/models,"
                + " GET /metrics or GET /health");
      }
    };
  }

  private ObjectNode model() {
    ObjectNode model =
        ApiJson.object()
            .put("id", options.modelName())
            .put("object", "model")
            .put("created", created)
            .put("owned_by", "kvtier")
            .put("root", engine.text().name())
            .put("max_model_len", engine.contextLimit());
    options.layerMix().ifPresent(mix -> model.putObject("kvtier").put("layers", mix));
    return model;
  }

  private ApiException modelNotFound(String model) {
    return new ApiException(
        404,
        ApiException.INVALID_REQUEST,
        "model_not_found",
        Optional.of("model"),
        "the model \""
            + model
            + "\" does not exist: this server serves \""
            + options.modelName()
            + "\" (GET /v1/models)",
        OptionalInt.empty());
  }

  /** Checks the request's key; returns its tenant. */
  private String authorize(Request request) {
    if (!keys.checked()) {
      return ApiKeys.DEFAULT_TENANT;
    }
    String header = request.getHeaders().get(HttpHeader.AUTHORIZATION);
    String given =
        header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)
            ? header.substring(7).strip()
            : "";
    // Digests of equal length, compared in constant time with every key: neither the key's
    // length nor its first wrong byte nor which key it is shows in the answer's timing.
    Optional<String> tenant = keys.tenant(given);
    if (tenant.isEmpty()) {
      String message;
      if (keys.perTenant()) {
        message =
            given.isEmpty()
                ? "no API key: send the header Authorization: Bearer KEY with a key of the"
                    + " server's --api-key-file"
                : "the API key is wrong: send a key of the server's --api-key-file";
      } else {
        message =
            given.isEmpty()
                ? "no API key: send the header Authorization: Bearer KEY with the key the server"
                    + " was started with (--api-key or KVTIER_API_KEY)"
                : "the API key is wrong: send the key the server was started with";
      }
      throw new ApiException(
          401,
          ApiException.INVALID_REQUEST,
          "invalid_api_key",
          Optional.empty(),
          message,
          OptionalInt.empty());
    }
    return tenant.get();
  }

  private static void allow(Request request, Response response, String... allowed) {
    String method = request.getMethod();
    for (String a : allowed) {
      if (a.equals(method)) {
        return;
      }
    }
    String list = String.join(", ", allowed);
    response.getHeaders().put(HttpHeader.ALLOW, list);
    throw ApiException.client(
        405,
        "method_not_allowed",
        method + " " + request.getHttpURI().getPath() + " is not allowed: use " + list);
  }

  private String readBody(Request request) throws IOException {
    long declared = request.getLength();
    int max = options.maxBodyBytes();
    if (declared > max) {
      throw tooLarge();
    }
    byte[] buffer = new byte[(int) Math.min(max + 1L, declared >= 0 ? declared + 1 : 8192)];
    int read = 0;
    InputStream in = Content.Source.asInputStream(request);
    try {
      while (read <= max) {
        if (read == buffer.length) {
          buffer = java.util.Arrays.copyOf(buffer, (int) Math.min(max + 1L, buffer.length * 2L));
        }
        int n = in.read(buffer, read, buffer.length - read);
        if (n < 0) {
          break;
        }
        read += n;
      }
    } catch (IOException e) {
      if (causedBy(e, TimeoutException.class)) {
        throw ApiException.client(
            408,
            "timeout",
            "the body stopped arriving: "
                + read
                + " bytes came, then nothing for "
                + options.readTimeout().toSeconds()
                + " s");
      }
      throw ApiException.badRequest(
          "the body ended after "
              + read
              + " bytes"
              + (declared >= 0 ? ", before its Content-Length of " + declared : "")
              + ": "
              + e.getMessage());
    }
    if (read > max) {
      throw tooLarge();
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(buffer, 0, read))
          .toString();
    } catch (CharacterCodingException e) {
      throw ApiException.badRequest("the body is not valid UTF-8");
    }
  }

  private ApiException tooLarge() {
    return ApiException.client(
        413, "body_too_large", "the body is larger than " + options.maxBodyBytes() + " bytes");
  }

  private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The body of an error in OpenAI's shape.
   *
   * @param e the error
   * @return {@code {"error": {"message", "type", "param", "code"}}}
   */
  static ObjectNode errorBody(ApiException e) {
    ObjectNode body = ApiJson.object();
    ObjectNode error = body.putObject("error");
    error.put("message", e.getMessage()).put("type", e.type());
    e.param().ifPresentOrElse(p -> error.put("param", p), () -> error.putNull("param"));
    error.put("code", e.code());
    return body;
  }

  private static void sendError(
      Request request, Response response, Callback callback, ApiException e) {
    if (response.isCommitted()) {
      callback.failed(e);
      return;
    }
    e.retryAfterSeconds()
        .ifPresent(s -> response.getHeaders().put(HttpHeader.RETRY_AFTER, Integer.toString(s)));
    if (e.status() == 401) {
      response.getHeaders().put(HttpHeader.WWW_AUTHENTICATE, "Bearer");
    }
    sendJson(request, response, callback, e.status(), ApiJson.write(errorBody(e)));
  }

  static int sendJson(
      Request request, Response response, Callback callback, int status, String body) {
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
    return send(request, response, callback, status, body);
  }

  private static int send(
      Request request, Response response, Callback callback, int status, String body) {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    response.setStatus(status);
    response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
    boolean head = request.getMethod().equals("HEAD");
    response.write(true, head ? null : ByteBuffer.wrap(bytes), callback);
    return status;
  }

  /**
   * Completes when the engine failed for good (its rank group failed): every later request
   * would get the same 503, so the command stops the server and reports the cause.
   *
   * @return the failure, with the cause in its message; never completes while the engine serves
   */
  public CompletableFuture<ApiException> failure() {
    return failure;
  }

  /**
   * Refuses new generations (503), lets the running exchanges finish (up to the request
   * timeout), then stops the listener. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    closing = true;
    long deadline = System.nanoTime() + options.requestTimeout().toNanos();
    while (active.get() > 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    stopQuietly(jetty);
  }
}
