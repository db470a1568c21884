package io.kvtier.cli.serve;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The body of {@code POST /v1/completions}: {@code {"prompt_tokens": [ids...], "max_tokens":
 * n}}. Parsing checks the grammar and the types; the limits of the model (vocabulary, context)
 * are checked by {@link #check}. Every failure is a 400 whose message names the field.
 *
 * @param promptTokens the prompt's token ids
 * @param maxTokens tokens to generate
 */
public record CompletionRequest(int[] promptTokens, int maxTokens) {
  private static final Set<String> FIELDS = Set.of("prompt_tokens", "max_tokens");

  /**
   * Parses a request body.
   *
   * @param body the body as text
   * @return the request
   * @throws ApiException a 400 naming what is wrong
   */
  public static CompletionRequest parse(String body) {
    Object json;
    try {
      json = StrictJson.parse(body);
    } catch (StrictJson.JsonException e) {
      throw ApiException.badRequest("the body is not valid JSON: " + e.getMessage());
    }
    if (!(json instanceof Map<?, ?> object)) {
      throw ApiException.badRequest(
          "the body must be a JSON object like {\"prompt_tokens\":"
              + " [1, 2, 3], \"max_tokens\": 8}");
    }
    for (Object name : object.keySet()) {
      if (!FIELDS.contains(name)) {
        throw ApiException.badRequest(
            "unknown field \"" + name + "\": the fields are prompt_tokens and max_tokens");
      }
    }
    Object prompt = object.get("prompt_tokens");
    if (prompt == null) {
      throw ApiException.badRequest("missing field prompt_tokens: an array of token ids");
    }
    if (!(prompt instanceof List<?> list)) {
      throw ApiException.badRequest(
          "prompt_tokens must be an array of token ids, not " + describe(prompt));
    }
    int[] tokens = new int[list.size()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = integer(list.get(i), "prompt_tokens[" + i + "]");
    }
    Object max = object.get("max_tokens");
    if (max == null) {
      throw ApiException.badRequest("missing field max_tokens: the number of tokens to generate");
    }
    return new CompletionRequest(tokens, integer(max, "max_tokens"));
  }

  private static int integer(Object value, String field) {
    if (value instanceof Long l) {
      if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
        throw ApiException.badRequest(field + "=" + l + " is out of range");
      }
      return (int) (long) l;
    }
    if (value instanceof BigInteger b) {
      throw ApiException.badRequest(field + "=" + b + " is out of range");
    }
    throw ApiException.badRequest(field + " must be an integer, not " + describe(value));
  }

  private static String describe(Object value) {
    if (value == StrictJson.NULL) {
      return "null";
    }
    if (value instanceof String s) {
      return "the string \"" + (s.length() > 20 ? s.substring(0, 20) + "..." : s) + "\"";
    }
    if (value instanceof Boolean b) {
      return b.toString();
    }
    if (value instanceof List<?>) {
      return "an array";
    }
    if (value instanceof Map<?, ?>) {
      return "an object";
    }
    return value.toString();
  }

  /**
   * Checks the request against the model's limits.
   *
   * @param vocabSize token ids must be below it
   * @param contextLimit prompt plus output must fit it
   * @throws ApiException a 400 naming the limit
   */
  public void check(int vocabSize, int contextLimit) {
    if (promptTokens.length == 0) {
      throw ApiException.badRequest("prompt_tokens is empty: give at least one token");
    }
    if (maxTokens < 1) {
      throw ApiException.badRequest("max_tokens=" + maxTokens + " must be at least 1");
    }
    for (int i = 0; i < promptTokens.length; i++) {
      int t = promptTokens[i];
      if (t < 0 || t >= vocabSize) {
        throw ApiException.badRequest(
            "prompt_tokens[" + i + "]=" + t + " is outside the vocabulary [0, " + vocabSize + ")");
      }
    }
    long total = (long) promptTokens.length + maxTokens;
    if (total > contextLimit) {
      throw ApiException.badRequest(
          "the prompt of "
              + promptTokens.length
              + " tokens plus max_tokens="
              + maxTokens
              + " is "
              + total
              + " tokens, more than the context limit of "
              + contextLimit
              + " tokens");
    }
  }
}
