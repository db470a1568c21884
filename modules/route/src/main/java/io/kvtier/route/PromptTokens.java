package io.kvtier.route;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The token ids the router hashes for a request body, to look its prefix up in the index. They
 * must be the ids the replicas cache: token arrays ({@code prompt_tokens}, or {@code prompt} as
 * an array of ids, both OpenAI and {@code kvtier serve} forms) are taken as they are; text
 * ({@code prompt} as a string, or chat {@code messages} joined as {@code role: content} lines) is
 * taken as its UTF-8 bytes, which matches a replica with a byte-level tokenizer only. A prompt
 * the router cannot read gives no tokens: the request is routed by load alone.
 */
final class PromptTokens {
  private PromptTokens() {}

  static int[] of(Map<?, ?> body) {
    Object tokens = body.get("prompt_tokens");
    if (tokens instanceof List<?> list) {
      return ids(list);
    }
    Object prompt = body.get("prompt");
    if (prompt instanceof List<?> list && (list.isEmpty() || list.get(0) instanceof Number)) {
      return ids(list);
    }
    if (prompt instanceof String text) {
      return bytes(text);
    }
    if (body.get("messages") instanceof List<?> messages) {
      StringBuilder b = new StringBuilder();
      for (Object m : messages) {
        if (m instanceof Map<?, ?> message) {
          b.append(message.get("role")).append(": ").append(message.get("content")).append('\n');
        }
      }
      return bytes(b.toString());
    }
    return new int[0];
  }

  private static int[] ids(List<?> list) {
    int[] out = new int[list.size()];
    for (int i = 0; i < out.length; i++) {
      if (!(list.get(i) instanceof Number n)) {
        return new int[0];
      }
      out[i] = n.intValue();
    }
    return out;
  }

  private static int[] bytes(String text) {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    int[] out = new int[b.length];
    for (int i = 0; i < b.length; i++) {
      out[i] = b[i] & 0xFF;
    }
    return out;
  }
}
