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
 */
record StreamedTurn(
    long ttftNanos, String text, long promptTokens, long cachedTokens, long completionTokens) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Sends {@code body} and reads its stream to the end.
   *
   * @return the turn; null if the server refused it (a status other than 200), sent an error
   *     event, or ended without usage
   */
  static StreamedTurn send(HttpClient client, URI endpoint, String body)
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
      response.body().close();
      return null;
    }
    long first = 0;
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
          return null;
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
          if (token && first == 0) {
            first = System.nanoTime();
          }
          if (content.isTextual()) {
            text.append(content.asText());
          }
        }
      }
    }
    if (usage == null) {
      return null;
    }
    return new StreamedTurn(
        (first == 0 ? System.nanoTime() : first) - sent,
        text.toString(),
        usage.path("prompt_tokens").asLong(),
        usage.path("prompt_tokens_details").path("cached_tokens").asLong(),
        usage.path("completion_tokens").asLong());
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
