package io.kvtier.route;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.IntStream;

/**
 * The token ids the router hashes for a request body, to look its prefix up in the index. They
 * must be the ids the replicas cache: token arrays ({@code prompt_tokens}, or {@code prompt} as
 * an array of ids, both OpenAI and {@code kvtier serve} forms) are taken as they are; text goes
 * through the replicas' model's {@link Text}: {@link #BYTES} for the tiny transformer (a {@code
 * prompt} string as its UTF-8 bytes, chat {@code messages} under its template, each message as
 * its role's marker (256 system or developer, 257 user, 258 assistant), its content's bytes and
 * 259 (end), then 258 to start the reply), or a GGUF model's own tokenizer and chat template
 * ({@code kvtier route --model FILE.gguf}). A prompt the router cannot read gives no tokens: the
 * request is routed by load alone.
 */
public final class PromptTokens {
  static final int SYSTEM = 256;
  static final int USER = 257;
  static final int ASSISTANT = 258;
  static final int END = 259;

  /** How a model turns text into the token ids its replicas cache. */
  public interface Text {
    /**
     * A {@code prompt} string's ids, as the replicas encode it (BOS included where they add it).
     *
     * @param text the prompt
     * @return the ids
     */
    int[] encode(String text);

    /**
     * Chat messages' ids under the replicas' chat template, ready for the reply.
     *
     * @param roles each message's role, in order
     * @param contents each message's text
     * @return the ids, or none if the model would not take these messages
     */
    int[] chat(List<String> roles, List<String> contents);
  }

  /** The tiny transformer's byte text: what {@code kvtier serve --model tiny} caches. */
  public static final PromptTokens BYTES = new PromptTokens(new ByteText());

  private final Text text;

  private PromptTokens(Text text) {
    this.text = Objects.requireNonNull(text, "text");
  }

  /**
   * The tokens of a model's text.
   *
   * @param text the replicas' tokenizer and chat template
   * @return the reader
   */
  public static PromptTokens of(Text text) {
    return new PromptTokens(text);
  }

  /**
   * The ids of a request body; none if it holds no prompt the router can read.
   *
   * @param body the parsed JSON body
   * @return the ids
   */
  public int[] tokens(Map<?, ?> body) {
    Object tokens = body.get("prompt_tokens");
    if (tokens instanceof List<?> list) {
      return ids(list);
    }
    Object prompt = body.get("prompt");
    if (prompt instanceof List<?> list && (list.isEmpty() || list.get(0) instanceof Number)) {
      return ids(list);
    }
    if (prompt instanceof String s) {
      return text.encode(s);
    }
    if (body.get("messages") instanceof List<?> messages) {
      List<String> roles = new ArrayList<>();
      List<String> contents = new ArrayList<>();
      for (Object m : messages) {
        if (!(m instanceof Map<?, ?> message)
            || !(message.get("role") instanceof String role)
            || content(message.get("content")) == null) {
          return new int[0];
        }
        roles.add(role);
        contents.add(content(message.get("content")));
      }
      return text.chat(roles, contents);
    }
    return new int[0];
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

  /** The tiny transformer's bytes and role markers. */
  private static final class ByteText implements Text {
    @Override
    public int[] encode(String text) {
      return bytes(text).toArray();
    }

    @Override
    public int[] chat(List<String> roles, List<String> contents) {
      IntStream.Builder out = IntStream.builder();
      for (int i = 0; i < roles.size(); i++) {
        int marker =
            switch (roles.get(i)) {
              case "system", "developer" -> SYSTEM;
              case "user" -> USER;
              case "assistant" -> ASSISTANT;
              default -> -1;
            };
        if (marker < 0) {
          return new int[0];
        }
        out.add(marker);
        bytes(contents.get(i)).forEach(out::add);
        out.add(END);
      }
      return out.add(ASSISTANT).build().toArray();
    }

    private static IntStream bytes(String text) {
      byte[] b = text.getBytes(StandardCharsets.UTF_8);
      return IntStream.range(0, b.length).map(i -> b[i] & 0xFF);
    }
  }
}
