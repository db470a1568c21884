package io.kvtier.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvtier.core.rank.TokenLogprob;
import io.kvtier.serving.ModelText;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * OpenAI's log-probability objects for a choice's tokens: a completion's {@code {"tokens",
 * "token_logprobs", "top_logprobs", "text_offset"}} and a chat's {@code {"content": [{"token",
 * "logprob", "bytes", "top_logprobs"}], "refusal"}}. A token is shown as its own text ({@link
 * ModelText#tokenBytes}), as {@code bytes:\xNN} where its bytes are not whole UTF-8 characters (a
 * byte-fallback token), and as {@code token_id:N} where the model has no text (vLLM's
 * conventions).
 */
final class LogprobsJson {
  private final ModelText text;

  LogprobsJson(ModelText text) {
    this.text = text;
  }

  /** How a client is shown the token. */
  String token(int id) {
    return token(id, text.tokenBytes(id));
  }

  /** How a client is shown the token whose bytes ({@link ModelText#tokenBytes}) are these. */
  private static String token(int id, byte[] bytes) {
    if (bytes == null) {
      return "token_id:" + id;
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      StringBuilder s = new StringBuilder("bytes:");
      for (byte b : bytes) {
        s.append(String.format("\\x%02x", b & 0xff));
      }
      return s.toString();
    }
  }

  /**
   * A completion's object for {@code entries}, whose first token's text starts {@code offset}
   * characters into the choice's text as the tokens' own texts lay it out.
   *
   * @return the object and the offset after the last token
   */
  ObjectNode completion(List<TokenLogprob> entries, int[] offset) {
    ObjectNode node = emptyCompletion();
    append(node, entries, offset);
    return node;
  }

  /**
   * A completion's object for an echoed prompt: its first token, which no position predicts
   * (null log-probabilities, as OpenAI shows it), then {@code entries}, those of the prompt's
   * other tokens.
   *
   * @param first the prompt's first token
   * @param entries the prompt's other tokens' log-probabilities
   * @param offset where the prompt's text starts in the choice's; advanced past it
   * @return the object
   */
  ObjectNode prompt(int first, List<TokenLogprob> entries, int[] offset) {
    ObjectNode node = emptyCompletion();
    String token = token(first);
    ((ArrayNode) node.get("tokens")).add(token);
    ((ArrayNode) node.get("token_logprobs")).addNull();
    ((ArrayNode) node.get("top_logprobs")).addNull();
    ((ArrayNode) node.get("text_offset")).add(offset[0]);
    offset[0] += token.length();
    append(node, entries, offset);
    return node;
  }

  /**
   * Appends one completion object's arrays to another's (an echoed prompt's and its choice's).
   *
   * @param to the object appended to
   * @param from the object whose entries follow
   * @return {@code to}
   */
  static ObjectNode concat(ObjectNode to, ObjectNode from) {
    for (String field : List.of("tokens", "token_logprobs", "top_logprobs", "text_offset")) {
      ((ArrayNode) to.get(field)).addAll((ArrayNode) from.get(field));
    }
    return to;
  }

  private static ObjectNode emptyCompletion() {
    ObjectNode node = ApiJson.object();
    node.putArray("tokens");
    node.putArray("token_logprobs");
    node.putArray("top_logprobs");
    node.putArray("text_offset");
    return node;
  }

  private void append(ObjectNode node, List<TokenLogprob> entries, int[] offset) {
    ArrayNode tokens = (ArrayNode) node.get("tokens");
    ArrayNode logprobs = (ArrayNode) node.get("token_logprobs");
    ArrayNode tops = (ArrayNode) node.get("top_logprobs");
    ArrayNode offsets = (ArrayNode) node.get("text_offset");
    for (TokenLogprob e : entries) {
      String token = token(e.token());
      tokens.add(token);
      logprobs.add(e.logprob());
      ObjectNode top = tops.addObject();
      int[] ids = e.topTokens();
      float[] lps = e.topLogprobs();
      for (int i = 0; i < ids.length; i++) {
        String t = token(ids[i]);
        if (!top.has(t)) { // two ids of one text: the more likely stands for both
          top.put(t, lps[i]);
        }
      }
      offsets.add(offset[0]);
      offset[0] += token.length();
    }
  }

  /** A chat's object for {@code entries}. */
  ObjectNode chat(List<TokenLogprob> entries) {
    ObjectNode node = ApiJson.object();
    ArrayNode content = node.putArray("content");
    for (TokenLogprob e : entries) {
      ObjectNode entry = content.addObject();
      describe(entry, e.token(), e.logprob());
      ArrayNode top = entry.putArray("top_logprobs");
      int[] ids = e.topTokens();
      float[] lps = e.topLogprobs();
      for (int i = 0; i < ids.length; i++) {
        describe(top.addObject(), ids[i], lps[i]);
      }
    }
    node.putNull("refusal");
    return node;
  }

  private void describe(ObjectNode entry, int id, float logprob) {
    byte[] bytes = text.tokenBytes(id);
    entry.put("token", token(id, bytes)).put("logprob", logprob);
    if (bytes == null) {
      entry.putNull("bytes");
    } else {
      ArrayNode array = entry.putArray("bytes");
      for (byte b : bytes) {
        array.add(b & 0xff);
      }
    }
  }
}
