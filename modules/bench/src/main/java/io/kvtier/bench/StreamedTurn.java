package io.kvtier.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;

/**
 * One streamed OpenAI call as the load benchmarks time it: the time to the first token (the first
 * chunk with text or a finish reason; a chat stream's first chunk carries only the role), the
 * text, and the usage of the last chunk.
 *
 * @param ttftNanos from sending to the first token
 * @param text the streamed text, chat deltas or completion text
 * @param promptTokens {@code usage.prompt_tokens}
 * @param cachedTokens {@code usage.prompt_tokens_details.cached_tokens}
 * @param completionTokens {@code usage.completion_tokens}
 * @param failure why the call failed; null when it succeeded (the other fields are then 0)
 * @param tokenNanos when each chunk with text came, from sending (the first is {@code
 *     ttftNanos} unless a finish came first): the inter-token latencies are their differences;
 *     empty when it failed
 */
record StreamedTurn(
    long ttftNanos,
    String text,
    long promptTokens,
    long cachedTokens,
    long completionTokens,
    Failure failure,
    long[] tokenNanos) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The longest error message a failure keeps. */
  private static final int MESSAGE_CHARS = 160;

  /**
   * Why a call failed.
   *
   * @param kind the cause, to group by: {@code HTTP 400 context_length_exceeded}, {@code error
   *     event server_error}, {@code stream without usage}, {@code I/O ConnectException}
   * @param message the server's error message or the exception's, at most {@value
   *     #MESSAGE_CHARS} characters
   */
  record Failure(String kind, String message) {}

  boolean failed() {
    return failure != null;
  }

  private static StreamedTurn failed(String kind, String message) {
    String m = message == null ? "" : message.strip();
    if (m.length() > MESSAGE_CHARS) {
      m = m.substring(0, MESSAGE_CHARS) + "...";
    }
    return new StreamedTurn(0, "", 0, 0, 0, new Failure(kind, m), new long[0]);
  }

  /** The error object's code (or type) and message, from an OpenAI error body or event. */
  private static StreamedTurn failedWith(String prefix, JsonNode error) {
    String code = error.path("code").asText("");
    if (code.isEmpty() || code.equals("null")) {
      code = error.path("type").asText("");
    }
    return failed(code.isEmpty() ? prefix : prefix + " " + code, error.path("message").asText(""));
  }

  /**
   * Sends {@code body} and reads its stream to the end.
   *
   * @return the turn; a {@link #failed()} one, saying why, if the server refused it (a status
   *     other than 200), sent an error event, ended without usage, or the connection failed
   */
  static StreamedTurn send(HttpClient client, URI endpoint, String body)
      throws InterruptedException {
    try {
      return read(client, endpoint, body);
    } catch (IOException e) {
      return failed("I/O " + e.getClass().getSimpleName(), String.valueOf(e.getMessage()));
    }
  }

  private static StreamedTurn read(HttpClient client, URI endpoint, String body)
      throws IOException, InterruptedException {
    long sent = System.nanoTime();
    HttpResponse<InputStream> response =
        client.send(
            HttpRequest.newBuilder(endpoint)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofInputStream());
    if (response.statusCode() != 200) {
      String text;
      try (InputStream in = response.body()) {
        text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      String prefix = "HTTP " + response.statusCode();
      try {
        JsonNode error = JSON.readTree(text).path("error");
        if (error.isObject()) {
          return failedWith(prefix, error);
        }
      } catch (IOException notJson) {
        // the body is not JSON: its text is the message
      }
      return failed(prefix, text);
    }
    long first = 0;
    java.util.List<Long> tokens = new java.util.ArrayList<>();
    StringBuilder text = new StringBuilder();
    JsonNode usage = null;
    try (BufferedReader lines =
        new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = lines.readLine()) != null) {
        if (!line.startsWith("data: ") || line.equals("data: [DONE]")) {
          continue;
        }
        JsonNode chunk = JSON.readTree(line.substring(6));
        if (chunk.has("error")) {
          return failedWith("error event", chunk.get("error"));
        }
        if (chunk.hasNonNull("usage")) {
          usage = chunk.get("usage");
        }
        for (JsonNode choice : chunk.path("choices")) {
          JsonNode content =
              choice.has("delta") ? choice.path("delta").path("content") : choice.path("text");
          boolean token =
              (content.isTextual() && !content.asText().isEmpty())
                  || !choice.path("finish_reason").isNull();
          if (token) {
            long now = System.nanoTime();
            if (first == 0) {
              first = now;
            }
            if (content.isTextual() && !content.asText().isEmpty()) {
              tokens.add(now - sent);
            }
          }
          if (content.isTextual()) {
            text.append(content.asText());
          }
        }
      }
    }
    if (usage == null) {
      return failed("stream without usage", text.length() + " characters streamed");
    }
    return new StreamedTurn(
        (first == 0 ? System.nanoTime() : first) - sent,
        text.toString(),
        usage.path("prompt_tokens").asLong(),
        usage.path("prompt_tokens_details").path("cached_tokens").asLong(),
        usage.path("completion_tokens").asLong(),
        null,
        tokens.stream().mapToLong(Long::longValue).toArray());
  }

  /**
   * The reply as a conversation keeps it for its next turn: printable ASCII without the chat
   * template's marker characters, at most {@code max} characters.
   */
  static String kept(String reply, int max) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < reply.length() && s.length() < max; i++) {
      char c = reply.charAt(i);
      if (c >= 0x20 && c < 0x7f && c != '<' && c != '|' && c != '>') {
        s.append(c);
      }
    }
    return s.toString();
  }

  /** Printable ASCII, one token per byte of the tiny model's byte tokenizer. */
  static String text(java.util.Random random, int bytes) {
    StringBuilder s = new StringBuilder(bytes);
    for (int i = 0; i < bytes; i++) {
      s.append((char) ('a' + random.nextInt(26)));
    }
    return s.toString();
  }
}
