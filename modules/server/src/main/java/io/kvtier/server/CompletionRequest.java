package io.kvtier.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvtier.core.rank.LogitBias;
import io.kvtier.core.rank.Penalties;
import io.kvtier.core.rank.Sampling;
import io.kvtier.serving.ModelText;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A parsed {@code POST /v1/completions} or {@code /v1/chat/completions} body: one or more prompts
 * as token ids and how to generate. A text prompt is encoded by the model's {@link ModelText}
 * (with BOS where the model adds one); a prompt of token ids is taken exactly as given. Parsing checks the grammar and the types ({@link #parse} here,
 * {@link ChatRequest#parse} for chat); {@link #check} checks the model's limits. Every failure is
 * a 400 whose {@code param} names the field.
 *
 * <p>Tokens are chosen greedily unless {@code temperature} is above 0 (the default is 0, not
 * OpenAI's 1: a client that wants sampling asks for it); then {@code top_p}, {@code top_k} (vLLM's
 * extension) and {@code seed} apply ({@link #sampling(BodyFields)}, docs/SERVE.md "Sampling").
 * {@code n} asks for several choices per prompt ({@link #choices(BodyFields)}); {@code best_of}
 * passes only as {@code n}. Penalties ({@code presence_penalty}, {@code frequency_penalty} and
 * vLLM's {@code repetition_penalty}) and {@code logit_bias} apply greedy or sampled. {@code
 * logprobs} (a completion's count, a chat's {@code logprobs} and {@code top_logprobs}) asks for
 * each token's log-probabilities, carried in the {@link Sampling}.
 *
 * @param model the model the client asked for
 * @param prompts the prompts, {@code n} choices each
 * @param maxTokens tokens to generate per prompt; empty: the endpoint's default
 * @param stream whether to answer with server-sent events
 * @param includeUsage whether a streamed answer ends with a usage chunk
 * @param chat whether the body came to the chat endpoint (its reply ends at the model's {@link
 *     ModelText#endOfReply() end of a reply})
 * @param cacheSalt the {@code cache_salt} (vLLM's field): with the tenant, it chooses the cache
 *     namespace (docs/SERVE.md, "Tenants"); empty if not sent
 * @param sampling how tokens are chosen, the seed drawn here if the client sent none; choice
 *     {@code i} (of prompt {@code i / n}) draws with {@code seed + i}
 * @param n choices per prompt, 1 to {@value #MAX_CHOICES}
 * @param stopRules what ends a choice: stop sequences, vLLM's {@code stop_token_ids}, {@code
 *     min_tokens}, {@code ignore_eos} and {@code include_stop_str_in_output}
 * @param echo OpenAI's {@code echo} (completions only): each choice's text starts with its prompt
 *     (as the prompt's tokens decode), and with {@code logprobs} its log-probabilities start with
 *     the prompt's tokens' ({@link Sampling#promptLogprobs()}: the first has none)
 */
public record CompletionRequest(
    String model,
    List<int[]> prompts,
    OptionalInt maxTokens,
    boolean stream,
    boolean includeUsage,
    boolean chat,
    Optional<String> cacheSalt,
    Sampling sampling,
    int n,
    StopRules stopRules,
    boolean echo) {

  /** OpenAI's default {@code max_tokens} of a completion. */
  static final int DEFAULT_COMPLETION_TOKENS = 16;

  private static final Set<String> FIELDS =
      Set.of(
          "model",
          "prompt",
          "max_tokens",
          "stream",
          "stream_options",
          "temperature",
          "top_p",
          "top_k",
          "n",
          "best_of",
          "stop",
          "echo",
          "user",
          "seed",
          "presence_penalty",
          "frequency_penalty",
          "repetition_penalty",
          "logprobs",
          "logit_bias",
          "suffix",
          "cache_salt",
          "ignore_eos",
          "stop_token_ids",
          "min_tokens",
          "include_stop_str_in_output",
          "kv_transfer_params");

  /** The most choices one prompt may ask for (OpenAI's bound on {@code n}). */
  static final int MAX_CHOICES = 128;

  /** Validates and copies the fields. */
  public CompletionRequest {
    Objects.requireNonNull(model, "model");
    prompts = prompts.stream().map(int[]::clone).toList();
    Objects.requireNonNull(maxTokens, "maxTokens");
    Objects.requireNonNull(cacheSalt, "cacheSalt");
    Objects.requireNonNull(sampling, "sampling");
    if (n < 1 || n > MAX_CHOICES) {
      throw new IllegalArgumentException("n=" + n + " is not in [1, " + MAX_CHOICES + "]");
    }
    Objects.requireNonNull(stopRules, "stopRules");
  }

  /**
   * Parses a {@code /v1/completions} body.
   *
   * @param body the parsed JSON
   * @param text the model's text, which encodes text prompts
   * @return the request
   * @throws ApiException a 400 naming what is wrong
   */
  static CompletionRequest parse(JsonNode body, ModelText text) {
    BodyFields f =
        BodyFields.of(body, "", "{\"model\": \"kvtier-tiny\", \"prompt\": \"Hello\"}", FIELDS);
    String model = model(f);
    List<int[]> prompts =
        prompts(f.required("prompt", "a string, token ids, or an array of either"), text);
    OptionalInt maxTokens = f.integer("max_tokens");
    Sampling sampling = sampling(f);
    OptionalInt logprobs = f.integer("logprobs");
    boolean echo = f.bool("echo").orElse(false);
    if (logprobs.isPresent()) {
      sampling =
          sampling
              .withLogprobs(topLogprobs(logprobs.getAsInt(), "logprobs"))
              .withPromptLogprobs(echo);
    }
    int n = choices(f);
    f.integer("best_of")
        .ifPresent(
            b -> {
              if (b != n) {
                throw ApiException.badField(
                    "best_of",
                    "best_of="
                        + b
                        + " with n="
                        + n
                        + " is not supported: kvtier serve does not rank choices by their"
                        + " likelihood, it answers every one it generates; send best_of equal to n,"
                        + " or leave it out");
              }
            });
    f.unsupported("suffix");
    f.string("user");
    boolean stream = f.bool("stream").orElse(false);
    StopRules stopRules = StopRules.parse(f);
    return new CompletionRequest(
        model,
        prompts,
        maxTokens,
        stream,
        includeUsage(f),
        false,
        cacheSalt(f),
        stopRules.holdBack(sampling, text.endOfGeneration()),
        n,
        stopRules,
        echo);
  }

  /**
   * The {@code n} both endpoints share: choices per prompt, 1 (the default) to {@value
   * #MAX_CHOICES}. Each choice draws with its own seed, so with a temperature they differ; greedy
   * choices are all the same text.
   */
  static int choices(BodyFields f) {
    int n = f.integer("n").orElse(1);
    if (n < 1 || n > MAX_CHOICES) {
      throw ApiException.badField(
          "n",
          "n="
              + n
              + " is out of range: give 1 (the default) to "
              + MAX_CHOICES
              + " choices per prompt");
    }
    return n;
  }

  /**
   * The most likely tokens to report beside each chosen one: 0 to {@value
   * Sampling#MAX_LOGPROBS} (vLLM's default bound; OpenAI's is 5 for a completion, 20 for a chat).
   */
  static int topLogprobs(int top, String field) {
    if (top < 0 || top > Sampling.MAX_LOGPROBS) {
      throw ApiException.badField(
          field,
          field
              + "="
              + top
              + " is out of range: give 0 (the chosen token's log-probability only) to "
              + Sampling.MAX_LOGPROBS
              + " most likely tokens");
    }
    return top;
  }

  /** The {@code cache_salt}: a non-empty string, as vLLM takes it. */
  static Optional<String> cacheSalt(BodyFields f) {
    Optional<String> salt = f.string("cache_salt");
    if (salt.isPresent() && salt.get().isEmpty()) {
      throw ApiException.badField(
          "cache_salt",
          "cache_salt is empty: send a non-empty string to keep the prompt's cache apart, or"
              + " leave it out");
    }
    return salt;
  }

  static String model(BodyFields f) {
    return BodyFields.string(
        f.required("model", "the model's id, as GET /v1/models lists it"), "model");
  }

  /**
   * The sampling fields both endpoints share: {@code temperature} 0 to 2 (0, the default, is
   * greedy), {@code top_p} in (0, 1], {@code top_k} -1 or 0 (all tokens) or at least 1, {@code
   * seed} any 64-bit integer (drawn here when absent, so a request without one is still the same
   * on every rank); the penalties, {@code presence_penalty} and {@code frequency_penalty} -2 to 2
   * and {@code repetition_penalty} above 0 to 10.
   */
  static Sampling sampling(BodyFields f) {
    double temperature = f.number("temperature").map(BigDecimal::doubleValue).orElse(0.0);
    if (!(temperature >= 0 && temperature <= 2)) {
      throw ApiException.badField(
          "temperature",
          "temperature="
              + f.number("temperature").orElseThrow().toPlainString()
              + " is out of range: give 0 (greedy, the default) to 2");
    }
    double topP = f.number("top_p").map(BigDecimal::doubleValue).orElse(1.0);
    if (!(topP > 0 && topP <= 1)) {
      throw ApiException.badField(
          "top_p",
          "top_p="
              + f.number("top_p").orElseThrow().toPlainString()
              + " is out of range: give more than 0 and at most 1 (1, the default, keeps every"
              + " token)");
    }
    int topK = f.integer("top_k").orElse(-1);
    if (topK < -1) {
      throw ApiException.badField(
          "top_k",
          "top_k="
              + topK
              + " is out of range: give -1 or 0 (every token, the default) or at least 1");
    }
    double presence = penalty(f, "presence_penalty", 0, -2, 2, "-2 to 2 (0, the default, is none)");
    double frequency =
        penalty(f, "frequency_penalty", 0, -2, 2, "-2 to 2 (0, the default, is none)");
    double repetition =
        penalty(
            f,
            "repetition_penalty",
            1,
            Double.MIN_VALUE,
            10,
            "more than 0 and at most 10 (1, the default, is none)");
    Penalties penalties = new Penalties((float) presence, (float) frequency, (float) repetition);
    LogitBias bias = logitBias(f);
    OptionalLong seed = f.longInteger("seed");
    if (temperature == 0) {
      return Sampling.GREEDY.withPenalties(penalties).withLogitBias(bias);
    }
    return new Sampling(
        (float) temperature,
        (float) topP,
        Math.max(0, topK),
        seed.isPresent() ? seed.getAsLong() : ThreadLocalRandom.current().nextLong(),
        -1,
        penalties,
        bias);
  }

  /**
   * OpenAI's {@code logit_bias}: an object from token ids (as strings) to biases, -100 to 100, at
   * most {@value LogitBias#MAX_TOKENS} of them; the ids are checked against the vocabulary by
   * {@link #check}.
   */
  private static LogitBias logitBias(BodyFields f) {
    Optional<JsonNode> given = f.get("logit_bias");
    if (given.isEmpty()) {
      return LogitBias.NONE;
    }
    JsonNode node = given.get();
    if (!node.isObject()) {
      throw ApiException.badField(
          "logit_bias",
          "logit_bias must be an object from token ids to biases, like {\"50256\": -100}, not "
              + BodyFields.describe(node));
    }
    if (node.size() > LogitBias.MAX_TOKENS) {
      throw ApiException.badField(
          "logit_bias",
          "logit_bias has " + node.size() + " tokens: give at most " + LogitBias.MAX_TOKENS);
    }
    Map<Integer, Float> biases = new HashMap<>();
    for (Map.Entry<String, JsonNode> e : node.properties()) {
      String param = "logit_bias." + e.getKey();
      int token;
      try {
        token = Integer.parseInt(e.getKey());
      } catch (NumberFormatException ex) {
        token = -1;
      }
      if (token < 0 || !e.getKey().equals(Integer.toString(token))) {
        throw ApiException.badField(
            param, param + ": the key must be a token id (a non-negative integer), not a word");
      }
      JsonNode value = e.getValue();
      if (!value.isNumber() || !(value.doubleValue() >= -100 && value.doubleValue() <= 100)) {
        throw ApiException.badField(
            param, param + " must be a number from -100 to 100, not " + BodyFields.describe(value));
      }
      biases.put(token, value.floatValue());
    }
    return LogitBias.of(biases);
  }

  /** A penalty field's value in {@code [min, max]}, else a 400 that gives the range. */
  private static double penalty(
      BodyFields f, String field, double absent, double min, double max, String range) {
    double value = f.number(field).map(BigDecimal::doubleValue).orElse(absent);
    if (!(value >= min && value <= max)) {
      throw ApiException.badField(
          field,
          field
              + "="
              + f.number(field).orElseThrow().toPlainString()
              + " is out of range: give "
              + range);
    }
    return value;
  }

  static boolean includeUsage(BodyFields f) {
    return f.get("stream_options")
        .map(
            o ->
                BodyFields.of(
                        o, "stream_options", "{\"include_usage\": true}", Set.of("include_usage"))
                    .bool("include_usage")
                    .orElse(false))
        .orElse(false);
  }

  private static List<int[]> prompts(JsonNode prompt, ModelText text) {
    if (prompt.isTextual()) {
      return List.of(encode(text, prompt.textValue(), "prompt"));
    }
    if (!prompt.isArray()) {
      throw ApiException.badField(
          "prompt",
          "prompt must be a string, an array of token ids, or an array of strings or of token-id"
              + " arrays, not "
              + BodyFields.describe(prompt));
    }
    if (prompt.isEmpty()) {
      throw ApiException.badField("prompt", "prompt is empty: give at least one token");
    }
    JsonNode first = prompt.get(0);
    if (first.isNumber()) {
      return List.of(tokens(prompt, "prompt"));
    }
    List<int[]> prompts = new ArrayList<>(prompt.size());
    for (int i = 0; i < prompt.size(); i++) {
      JsonNode p = prompt.get(i);
      String param = "prompt[" + i + "]";
      if (p.isTextual()) {
        prompts.add(encode(text, p.textValue(), param));
      } else if (p.isArray()) {
        prompts.add(tokens(p, param));
      } else {
        throw ApiException.badField(
            param,
            param
                + " must be a string or an array of token ids, like prompt[0], not "
                + BodyFields.describe(p));
      }
    }
    return prompts;
  }

  private static int[] encode(ModelText text, String prompt, String param) {
    try {
      return text.encode(prompt);
    } catch (ModelText.TextUnavailableException e) {
      throw ApiException.badField(param, e.getMessage());
    }
  }

  private static int[] tokens(JsonNode array, String param) {
    int[] tokens = new int[array.size()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = BodyFields.integer(array.get(i), param + "[" + i + "]");
    }
    return tokens;
  }

  /**
   * The prompts.
   *
   * @return copies
   */
  @Override
  public List<int[]> prompts() {
    return prompts.stream().map(int[]::clone).toList();
  }

  /**
   * Checks the request against the model's limits.
   *
   * @param vocabSize token ids must be below it
   * @param contextLimit each prompt plus its output must fit it
   * @return the tokens to generate per prompt: {@code max_tokens}, else 16 for a completion and
   *     the rest of the context for a chat reply; 0 for an echo that asks for no token (OpenAI
   *     allows {@code max_tokens} 0 with {@code echo}: the answer is the prompt alone)
   * @throws ApiException a 400 naming the limit
   */
  int check(int vocabSize, int contextLimit) {
    String field = chat ? "max_completion_tokens" : "max_tokens";
    boolean echoOnly = echo && maxTokens.isPresent() && maxTokens.getAsInt() == 0;
    if (maxTokens.isPresent() && maxTokens.getAsInt() < 1 && !echoOnly) {
      throw ApiException.badField(
          field,
          field
              + "="
              + maxTokens.getAsInt()
              + " must be at least 1 (0 only with echo, which then answers the prompt alone)");
    }
    int longest = 0;
    for (int p = 0; p < prompts.size(); p++) {
      int[] prompt = prompts.get(p);
      String param = prompts.size() == 1 ? "prompt" : "prompt[" + p + "]";
      if (prompt.length == 0) {
        throw ApiException.badField(param, param + " is empty: give at least one token");
      }
      for (int i = 0; i < prompt.length; i++) {
        int t = prompt[i];
        if (t < 0 || t >= vocabSize) {
          throw ApiException.badField(
              param,
              param + "[" + i + "]=" + t + " is outside the vocabulary [0, " + vocabSize + ")");
        }
      }
      longest = Math.max(longest, prompt.length);
    }
    int biased = sampling.logitBias().largestToken();
    if (biased >= vocabSize) {
      throw ApiException.badField(
          "logit_bias." + biased,
          "logit_bias." + biased + " is outside the vocabulary [0, " + vocabSize + ")");
    }
    for (int id : stopRules.stopTokenIds()) {
      if (id >= vocabSize) {
        throw ApiException.badField(
            "stop_token_ids",
            "stop_token_ids holds " + id + ", outside the vocabulary [0, " + vocabSize + ")");
      }
    }
    if (sampling.minTokens().tokens().length >= vocabSize) {
      throw ApiException.badField(
          "stop_token_ids",
          "with min_tokens="
              + stopRules.minTokens()
              + ", stop_token_ids and the model's end tokens hold back every token of the"
              + " vocabulary: nothing could be generated; send fewer stop token ids");
    }
    int tokens = maxTokens.orElse(chat ? contextLimit - longest : DEFAULT_COMPLETION_TOKENS);
    if (echoOnly) {
      if (stopRules.minTokens() > 0) {
        throw ApiException.badField(
            "min_tokens", "min_tokens=" + stopRules.minTokens() + " is more than max_tokens=0");
      }
      if ((long) longest + 1 > contextLimit) {
        throw ApiException.badField(
            "prompt",
            "the prompt of "
                + longest
                + " tokens leaves no room in the context limit of "
                + contextLimit
                + " tokens: shorten it");
      }
      return 0;
    }
    if (stopRules.minTokens() > tokens) {
      throw ApiException.badField(
          "min_tokens",
          "min_tokens="
              + stopRules.minTokens()
              + " is more than "
              + field
              + "="
              + tokens
              + ": give at most as many as the choice may generate");
    }
    long total = (long) longest + Math.max(tokens, 1);
    if (total > contextLimit || tokens < 1) {
      throw ApiException.badField(
          field,
          "the prompt of "
              + longest
              + " tokens plus "
              + field
              + "="
              + tokens
              + " is "
              + total
              + " tokens, more than the context limit of "
              + contextLimit
              + " tokens: shorten the prompt or lower "
              + field);
    }
    return tokens;
  }
}
