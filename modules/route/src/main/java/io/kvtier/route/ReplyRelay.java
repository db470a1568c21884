package io.kvtier.route;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Passes a replica's reply to the client: a server-sent stream event by event as it comes, any
 * other reply read whole first, so that a reply that breaks off before the client got anything
 * can still go to another replica; a stream that breaks off (or falls silent, {@link
 * SilenceWatch}) after its first bytes ends with one error event in OpenAI's shape.
 */
final class ReplyRelay {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SilenceWatch silence;
  private final Duration readTimeout;

  ReplyRelay(SilenceWatch silence, Duration readTimeout) {
    this.silence = silence;
    this.readTimeout = readTimeout;
  }

  /** The replica failed after its headers, before the router sent the client anything. */
  static final class ReplicaFailedException extends Exception {
    ReplicaFailedException(IOException cause) {
      super(cause);
    }

    @Override
    public synchronized IOException getCause() {
      return (IOException) super.getCause();
    }
  }

  /**
   * Writing to the client failed (it went away): not the replica's fault, and nothing to retry.
   */
  static final class ClientGoneException extends IOException {
    ClientGoneException(IOException cause) {
      super("the client went away: " + cause, cause);
    }
  }

  /**
   * Copies status, content type and body (a server-sent stream as it comes, event by event).
   *
   * @return null once the client got the reply; the replica's failure if a stream broke off
   *     after its first bytes (the client got an error event and the stream's end)
   * @throws ReplicaFailedException if the replica failed before the client got anything: retry
   * @throws ClientGoneException if writing to the client failed
   * @throws IOException if closing the replica's reply failed
   */
  IOException relay(HttpExchange exchange, HttpResponse<InputStream> response)
      throws IOException, ReplicaFailedException {
    return relay(exchange, response, () -> {});
  }

  /**
   * As {@link #relay(HttpExchange, HttpResponse)}, calling {@code firstBytes} just before the
   * client gets the reply's first bytes (its headers).
   */
  IOException relay(HttpExchange exchange, HttpResponse<InputStream> response, Runnable firstBytes)
      throws IOException, ReplicaFailedException {
    Optional<String> type = response.headers().firstValue("Content-Type");
    type.ifPresent(t -> exchange.getResponseHeaders().set("Content-Type", t));
    try (InputStream in = response.body();
        SilenceWatch.Watched watch = silence.watch(in)) {
      if (!type.orElse("").startsWith("text/event-stream")) {
        byte[] whole = beforeClient(watch, in::readAllBytes);
        firstBytes.run();
        try {
          exchange.sendResponseHeaders(
              response.statusCode(), whole.length == 0 ? -1 : whole.length);
          exchange.getResponseBody().write(whole);
        } catch (IOException e) {
          throw new ClientGoneException(e);
        }
        return null;
      }
      byte[] buffer = new byte[8192];
      int n = beforeClient(watch, () -> in.read(buffer));
      watch.heard();
      firstBytes.run();
      OutputStream out = exchange.getResponseBody();
      try {
        exchange.sendResponseHeaders(response.statusCode(), 0);
      } catch (IOException e) {
        throw new ClientGoneException(e);
      }
      while (n >= 0) {
        try {
          out.write(buffer, 0, n);
          out.flush();
        } catch (IOException e) {
          throw new ClientGoneException(e);
        }
        IOException failed = null;
        try {
          n = in.read(buffer);
          watch.heard();
        } catch (IOException e) {
          failed = e;
        }
        if (watch.silenced()) {
          failed = silent();
        }
        if (failed != null) {
          try {
            out.write(streamError(failed));
            out.flush();
          } catch (IOException e) {
            // The client is gone too: the replica's failure is what to report.
          }
          return failed;
        }
      }
      return null;
    }
  }

  /**
   * Reads a reply whole, under the same silence watch, without passing it on: the prefill
   * replica's answer, whose handle the router sends on, and a failed reply it may retry.
   *
   * @return the body
   * @throws ReplicaFailedException if the replica failed or fell silent before its end
   */
  byte[] readWhole(HttpResponse<InputStream> response) throws ReplicaFailedException {
    try (InputStream in = response.body();
        SilenceWatch.Watched watch = silence.watch(in)) {
      return beforeClient(watch, in::readAllBytes);
    } catch (IOException e) {
      // Closing the body failed after it was read: the body is what counts.
      throw new ReplicaFailedException(e);
    }
  }

  /** A read from a replica's reply. */
  @FunctionalInterface
  private interface Read<T> {
    T read() throws IOException;
  }

  /**
   * A read before the client got anything: a failure, or silence past the read timeout, is the
   * replica's, and the request may go to another one.
   */
  private <T> T beforeClient(SilenceWatch.Watched watch, Read<T> read)
      throws ReplicaFailedException {
    T got;
    try {
      got = read.read();
    } catch (IOException e) {
      throw new ReplicaFailedException(watch.silenced() ? silent() : e);
    }
    if (watch.silenced()) {
      throw new ReplicaFailedException(silent());
    }
    return got;
  }

  /** Sends a reply the router read whole (a replica's refusal) to the client unchanged. */
  static void send(HttpExchange exchange, HttpResponse<?> response, byte[] body)
      throws IOException {
    response
        .headers()
        .firstValue("Content-Type")
        .ifPresent(t -> exchange.getResponseHeaders().set("Content-Type", t));
    exchange.sendResponseHeaders(response.statusCode(), body.length == 0 ? -1 : body.length);
    exchange.getResponseBody().write(body);
  }

  private IOException silent() {
    return new IOException(
        "the replica sent nothing for " + readTimeout.toSeconds() + " s (--replica-read-timeout)");
  }

  private static byte[] streamError(IOException e) {
    return ("data: "
            + errorJson(
                "replica_failed",
                "the replica serving this stream failed after it began ("
                    + e
                    + "); the stream cannot be resumed: send the request again")
            + "\n\n")
        .getBytes(StandardCharsets.UTF_8);
  }

  static void error(HttpExchange exchange, int status, String code, String message)
      throws IOException {
    byte[] bytes = errorJson(code, message).getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
  }

  /** OpenAI's error shape, {@code {"error": {"message", "type", "param", "code"}}}. */
  private static String errorJson(String code, String message) {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", "router_error");
    error.put("param", null);
    error.put("code", code);
    try {
      return JSON.writeValueAsString(Map.of("error", error));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write an error body", e);
    }
  }
}
