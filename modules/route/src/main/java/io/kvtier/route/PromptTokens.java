package io.kvtier.route;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * The token ids the router hashes for a request body, to look its prefix up in the index. They
 * must be the ids the replicas cache: token arrays ({@code prompt_tokens}, or {@code prompt} as
 * an array of ids, both OpenAI and {@code kvtier serve} forms) are taken as they are; text is
 * tokenized as {@code kvtier serve}'s byte tokenizer does ({@code io.kvtier.server
 * .ByteTokenizer}): a {@code prompt} string as its UTF-8 bytes, chat {@code messages} under its
 * chat template, each message as its role's marker (256 system or developer, 257 user, 258
 * assistant), its content's bytes and 259 (end), then 258 to start the reply. A replica with
 * another tokenizer would need its own here. A prompt the router cannot read gives no tokens:
 * the request is routed by load alone.
 */
final class PromptTokens {
  static final int SYSTEM = 256;
  static final int USER = 257;
  static final int ASSISTANT = 258;
  static final int END = 259;

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
      return bytes(text).toArray();
    }
    if (body.get("messages") instanceof List<?> messages) {
      return chat(messages);
    }
    return new int[0];
  }

  /** The chat template's tokens; none if a message is not one serve would take. */
  private static int[] chat(List<?> messages) {
    IntStream.Builder out = IntStream.builder();
    for (Object m : messages) {
      if (!(m instanceof Map<?, ?> message)) {
        return new int[0];
      }
      int marker =
          switch (String.valueOf(message.get("role"))) {
            case "system", "developer" -> SYSTEM;
            case "user" -> USER;
            case "assistant" -> ASSISTANT;
            default -> -1;
          };
      String content = content(message.get("content"));
      if (marker < 0 || content == null) {
        return new int[0];
      }
      out.add(marker);
      bytes(content).forEach(out::add);
      out.add(END);
    }
    return out.add(ASSISTANT).build().toArray();
  }

  /** A content string, or its text parts joined; null if it is neither. */
  private static String content(Object content) {
    if (content instanceof String s) {
      return s;
    }
    if (!(content instanceof List<?> parts)) {
      return null;
    }
    StringBuilder text = new StringBuilder();
    for (Object p : parts) {
      if (!(p instanceof Map<?, ?> part) || !(part.get("text") instanceof String s)) {
        return null;
      }
      text.append(s);
    }
    return text.toString();
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

  private static IntStream bytes(String text) {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    return IntStream.range(0, b.length).map(i -> b[i] & 0xFF);
  }
}
