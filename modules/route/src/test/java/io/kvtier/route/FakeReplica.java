package io.kvtier.route;

import com.hazelcast.core.HazelcastInstance;
import com.sun.net.httpserver.HttpServer;
import io.kvtier.core.cache.CacheEvent;
import io.kvtier.core.cache.CacheMedium;
import io.kvtier.core.cache.PageHasher;
import io.kvtier.events.HazelcastKvEventSink;
import io.kvtier.events.KvEventCodec;
import io.kvtier.events.KvEventSink;
import io.kvtier.events.KvEventStream;
import io.kvtier.events.ZmqKvEventSink;
import io.kvtier.spi.PageKey;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A stand-in for a {@code kvtier serve} replica: answers the OpenAI routes with its own number
 * (a stream as three server-sent events), records the keys it was sent, and publishes KV events
 * with the real publisher for the prompts the test says it caches.
 */
final class FakeReplica implements AutoCloseable {
  /** How the replica answers {@code /v1/completions}. */
  enum Answer {
    /** In full (a stream: three events and [DONE]). */
    WHOLE,
    /** Headers, then the connection breaks before any body byte. */
    BREAK_BEFORE_BODY,
    /** Headers and the first bytes (a stream: its first event), then the connection breaks. */
    BREAK_AFTER_FIRST_BYTES,
    /** 429, as a replica whose queue is full. */
    REFUSE,
    /** Nothing, not even headers, until the replica closes (a frozen process). */
    SILENT,
    /**
     * In full after 2.5 s (past a 1-second read timeout): a busy replica, or a long answer that is
     * not streamed; {@code /health} answers meanwhile.
     */
    SLOW,
    /** A stream's first event, then nothing until the replica closes. */
    SILENT_AFTER_FIRST_EVENT,
    /** A stream of events until writing one fails (its reader went away), at most 10 s. */
    ENDLESS
  }

  private final java.util.concurrent.CountDownLatch closed =
      new java.util.concurrent.CountDownLatch(1);

  final int id;
  volatile Answer answer = Answer.WHOLE;
  final ConcurrentLinkedQueue<String> authorizations = new ConcurrentLinkedQueue<>();

  /** The role its {@code GET /health} names; null: none (a replica of before the roles). */
  volatile String role = "both";

  /** When set, answers {@code /v1/completions} and chat instead of {@link #answer}. */
  volatile com.sun.net.httpserver.HttpHandler completions;

  /** While true, {@code GET /health} answers nothing until the replica closes (a frozen process). */
  volatile boolean healthFrozen;

  /** The bodies of the completions it was sent, in order. */
  final ConcurrentLinkedQueue<String> bodies = new ConcurrentLinkedQueue<>();

  private final Optional<ZmqKvEventSink> zmq;
  private final Optional<String> ringbuffer;
  private final KvEventStream stream;
  private HttpServer server;
  private int port;

  FakeReplica(int id) throws IOException {
    this(id, 1000);
  }

  FakeReplica(int id, int replaySize) throws IOException {
    this(
        id,
        new ZmqKvEventSink("tcp://127.0.0.1:*", Optional.of("tcp://127.0.0.1:*"), "", replaySize),
        Optional.empty());
  }

  /** A replica publishing to the Hazelcast ringbuffer {@code name} of {@code instance}. */
  FakeReplica(int id, HazelcastInstance instance, String name) throws IOException {
    this(id, new HazelcastKvEventSink(instance, name, () -> {}), Optional.of(name));
  }

  private FakeReplica(int id, KvEventSink sink, Optional<String> ringbuffer) throws IOException {
    this.id = id;
    this.zmq = sink instanceof ZmqKvEventSink z ? Optional.of(z) : Optional.empty();
    this.ringbuffer = ringbuffer;
    this.stream =
        new KvEventStream(sink, new KvEventCodec(id, "file"), 64, 64, Duration.ofMillis(5));
    start(0);
  }

  void start(int onPort) throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", onPort), 0);
    server.createContext(
        "/v1/models", e -> reply(e, "application/json", "{\"data\":[{\"id\":\"tiny\"}]}"));
    server.createContext(
        "/health",
        e -> {
          if (healthFrozen) {
            try {
              closed.await(60, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException interrupted) {
              Thread.currentThread().interrupt();
            }
            throw new IllegalStateException("replica " + id + " closed while frozen");
          }
          reply(
              e,
              "application/json",
              role == null
                  ? "{\"status\":\"ok\"}"
                  : "{\"status\":\"ok\",\"role\":\"" + role + "\"}");
        });
    server.createContext(
        "/v1/completions",
        e -> {
          authorizations.add(String.valueOf(e.getRequestHeaders().getFirst("Authorization")));
          if (completions != null) {
            completions.handle(e);
            return;
          }
          String body = new String(e.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
          boolean stream = body.contains("\"stream\":true");
          if (stream) {
            e.getResponseHeaders().set("Content-Type", "text/event-stream");
          }
          Answer a = answer;
          if (a == Answer.SLOW) {
            try {
              Thread.sleep(2500);
            } catch (InterruptedException interrupted) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException("replica " + id + " interrupted while slow");
            }
            a = Answer.WHOLE;
          }
          if (a == Answer.REFUSE) {
            byte[] b = "{\"error\":{\"code\":\"queue_full\"}}".getBytes(StandardCharsets.UTF_8);
            e.getResponseHeaders().set("Content-Type", "application/json");
            e.sendResponseHeaders(429, b.length);
            try (OutputStream out = e.getResponseBody()) {
              out.write(b);
            }
            return;
          }
          if (a == Answer.SILENT || a == Answer.SILENT_AFTER_FIRST_EVENT) {
            if (a == Answer.SILENT_AFTER_FIRST_EVENT) {
              e.sendResponseHeaders(200, 0);
              e.getResponseBody().write(("data: {\"replica\":" + id + ",\"i\":0}\n\n").getBytes());
              e.getResponseBody().flush();
            }
            try {
              closed.await(60, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException interrupted) {
              Thread.currentThread().interrupt();
            }
            throw new IllegalStateException("replica " + id + " closed while silent");
          }
          if (a == Answer.ENDLESS) {
            e.getResponseHeaders().set("Content-Type", "text/event-stream");
            e.sendResponseHeaders(200, 0);
            long end = System.nanoTime() + 10_000_000_000L;
            try (OutputStream out = e.getResponseBody()) {
              for (int i = 0; System.nanoTime() < end; i++) {
                out.write(("data: {\"replica\":" + id + ",\"i\":" + i + "}\n\n").getBytes());
                out.flush();
                Thread.sleep(1);
              }
            } catch (IOException | InterruptedException gone) {
              // The reader went away: what this answer is for.
            }
            return;
          }
          if (a != Answer.WHOLE) {
            byte[] first =
                (stream ? "data: {\"replica\":" + id + ",\"i\":0}\n\n" : "{\"replica\"")
                    .getBytes(StandardCharsets.UTF_8);
            e.sendResponseHeaders(200, stream ? 0 : 100);
            if (a == Answer.BREAK_AFTER_FIRST_BYTES) {
              e.getResponseBody().write(first);
              e.getResponseBody().flush();
            }
            // The JDK server closes the connection of a handler that throws, mid-body.
            throw new IllegalStateException("replica " + id + " breaks off its answer");
          }
          if (stream) {
            e.sendResponseHeaders(200, 0);
            try (OutputStream out = e.getResponseBody()) {
              for (int i = 0; i < 3; i++) {
                out.write(("data: {\"replica\":" + id + ",\"i\":" + i + "}\n\n").getBytes());
                out.flush();
              }
              out.write("data: [DONE]\n\n".getBytes());
            }
          } else {
            reply(e, "application/json", "{\"replica\":" + id + "}");
          }
        });
    server.createContext(
        "/v1/chat/completions",
        e -> {
          if (completions != null) {
            completions.handle(e);
            return;
          }
          reply(e, "application/json", "{\"replica\":" + id + "}");
        });
    // Exchanges on threads of their own, as a real replica's: /health answers beside a slow one.
    server.setExecutor(java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
    server.start();
    port = server.getAddress().getPort();
  }

  static void reply(com.sun.net.httpserver.HttpExchange e, String type, String text)
      throws IOException {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    e.getResponseHeaders().set("Content-Type", type);
    e.sendResponseHeaders(200, b.length);
    try (OutputStream out = e.getResponseBody()) {
      out.write(b);
    }
  }

  /** Stops answering HTTP (as a crashed replica does). */
  void stopHttp() {
    server.stop(0);
  }

  int port() {
    return port;
  }

  ReplicaSpec spec() {
    URI http = URI.create("http://127.0.0.1:" + port);
    return ringbuffer
        .map(name -> new ReplicaSpec(http, ReplicaSpec.HAZELCAST + name, Optional.empty()))
        .orElseGet(
            () ->
                new ReplicaSpec(
                    http, zmq.orElseThrow().endpoint(), zmq.orElseThrow().replayEndpoint()));
  }

  /** Publishes that the replica holds the page-aligned prefix of {@code tokens} in a medium. */
  void caches(int[] tokens, int pageSize, CacheMedium medium) {
    caches(tokens, pageSize, medium, 0);
  }

  /** Publishes that the replica holds the prefix of {@code tokens} in a namespace. */
  void caches(int[] tokens, int pageSize, CacheMedium medium, long namespace) {
    List<PageKey> keys = PageHasher.pageKeys(namespace, tokens, pageSize);
    stream.onEvent(
        new CacheEvent.BlocksStored(medium, namespace, keys, Optional.empty(), tokens, pageSize));
    stream.flush();
  }

  @Override
  public void close() {
    closed.countDown();
    server.stop(0);
    stream.close();
  }
}
