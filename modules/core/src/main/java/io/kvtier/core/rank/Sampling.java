package io.kvtier.core.rank;

/**
 * How a request's next tokens are chosen from the model's logits ({@link Sampler}): greedily (the
 * largest logit) with {@code temperature} 0, the default, else drawn from the softmax of the
 * logits divided by {@code temperature}, restricted to the {@code topK} largest (0: all) and then
 * to the smallest most-likely set whose probability reaches {@code topP}. The draw for the token at
 * position {@code p} is the {@code seed}'s own uniform number for {@code p}, so a request's output
 * is a function of its prompt and seed alone: the same on every rank, with or without the cache,
 * batched or not, speculated or not.
 *
 * @param temperature 0 for greedy decoding, else positive and finite (OpenAI's range is 0 to 2)
 * @param topP the nucleus: in (0, 1], 1 for all
 * @param topK the most candidates, 0 for all; at least 0
 * @param seed the draws' seed; any value (the server draws one where a client sends none)
 * @param logprobs what to report of each chosen token ({@link TokenLogprob}, vLLM's
 *     SamplingParams has it too): -1 (the default) nothing, else its log-probability and those of
 *     the {@code logprobs} most likely tokens, 0 to {@value #MAX_LOGPROBS}; it changes no choice.
 *     Only of a model that {@link ModelRunner#reportsLogprobs()}
 * @param penalties on tokens the request has seen, applied before the choice, greedy too ({@link
 *     Penalties#NONE} by default); only of a model that {@link ModelRunner#samples()}
 * @param logitBias biases added to tokens' logits before the penalties ({@link LogitBias#NONE} by
 *     default); only of a model that {@link ModelRunner#samples()}
 * @param minTokens the end tokens held back until the request has generated enough ({@link
 *     MinTokens#NONE} by default); only of a model that {@link ModelRunner#samples()}
 * @param promptLogprobs whether the log-probabilities of the prompt's tokens are reported too
 *     (each from the logits of the position before it, with the {@code logprobs} most likely
 *     tokens; OpenAI's {@code echo}); such a request matches no cached prefix, since a cached
 *     position's logits are never computed. False by default; only of a model that {@link
 *     ModelRunner#reportsPromptLogprobs()}, and with {@code logprobs} at least 0
 */
public record Sampling(
    float temperature,
    float topP,
    int topK,
    long seed,
    int logprobs,
    Penalties penalties,
    LogitBias logitBias,
    MinTokens minTokens,
    boolean promptLogprobs) {

  /** The most likely tokens a request may ask to be reported at each position (vLLM's default). */
  public static final int MAX_LOGPROBS = 20;

  /** Greedy decoding: the largest logit, the lowest token id on ties; nothing reported. */
  public static final Sampling GREEDY =
      new Sampling(0, 1, 0, 0, -1, Penalties.NONE, LogitBias.NONE, MinTokens.NONE, false);

  /**
   * Sampling that reports nothing of its tokens.
   *
   * @param temperature 0 for greedy decoding, else positive and finite
   * @param topP the nucleus: in (0, 1], 1 for all
   * @param topK the most candidates, 0 for all
   * @param seed the draws' seed
   */
  public Sampling(float temperature, float topP, int topK, long seed) {
    this(temperature, topP, topK, seed, -1, Penalties.NONE, LogitBias.NONE, MinTokens.NONE, false);
  }

  /**
   * Sampling without penalties.
   *
   * @param temperature 0 for greedy decoding, else positive and finite
   * @param topP the nucleus: in (0, 1], 1 for all
   * @param topK the most candidates, 0 for all
   * @param seed the draws' seed
   * @param logprobs -1 for none, else the most likely tokens to report, 0 to {@value
   *     #MAX_LOGPROBS}
   */
  public Sampling(float temperature, float topP, int topK, long seed, int logprobs) {
    this(
        temperature,
        topP,
        topK,
        seed,
        logprobs,
        Penalties.NONE,
        LogitBias.NONE,
        MinTokens.NONE,
        false);
  }

  /**
   * Sampling without a logit bias.
   *
   * @param temperature 0 for greedy decoding, else positive and finite
   * @param topP the nucleus: in (0, 1], 1 for all
   * @param topK the most candidates, 0 for all
   * @param seed the draws' seed
   * @param logprobs -1 for none, else the most likely tokens to report
   * @param penalties the penalties
   */
  public Sampling(
      float temperature, float topP, int topK, long seed, int logprobs, Penalties penalties) {
    this(temperature, topP, topK, seed, logprobs, penalties, LogitBias.NONE, MinTokens.NONE, false);
  }

  /**
   * Sampling that holds back no token.
   *
   * @param temperature 0 for greedy decoding, else positive and finite
   * @param topP the nucleus: in (0, 1], 1 for all
   * @param topK the most candidates, 0 for all
   * @param seed the draws' seed
   * @param logprobs -1 for none, else the most likely tokens to report
   * @param penalties the penalties
   * @param logitBias the logit bias
   */
  public Sampling(
      float temperature,
      float topP,
      int topK,
      long seed,
      int logprobs,
      Penalties penalties,
      LogitBias logitBias) {
    this(temperature, topP, topK, seed, logprobs, penalties, logitBias, MinTokens.NONE, false);
  }

  /** Validates the fields; each message names the field and the value. */
  public Sampling {
    if (!(temperature >= 0) || Float.isInfinite(temperature)) {
      throw new IllegalArgumentException(
          "temperature=" + temperature + " must be 0 (greedy) or positive and finite");
    }
    if (!(topP > 0 && topP <= 1)) {
      throw new IllegalArgumentException("topP=" + topP + " must be in (0, 1]");
    }
    if (topK < 0) {
      throw new IllegalArgumentException("topK=" + topK + " must be >= 0 (0 for all tokens)");
    }
    java.util.Objects.requireNonNull(penalties, "penalties");
    java.util.Objects.requireNonNull(logitBias, "logitBias");
    java.util.Objects.requireNonNull(minTokens, "minTokens");
    if (logprobs < -1 || logprobs > MAX_LOGPROBS) {
      throw new IllegalArgumentException(
          "logprobs=" + logprobs + " must be -1 (none) or 0 to " + MAX_LOGPROBS);
    }
    if (promptLogprobs && logprobs < 0) {
      throw new IllegalArgumentException(
          "promptLogprobs needs logprobs of at least 0 (the most likely tokens to report), not "
              + logprobs);
    }
  }

  /**
   * The same choices, with another seed (the choices of one request draw apart).
   *
   * @param seed the seed
   * @return a copy
   */
  public Sampling withSeed(long seed) {
    return new Sampling(
        temperature, topP, topK, seed, logprobs, penalties, logitBias, minTokens, promptLogprobs);
  }

  /**
   * The same choices, reporting their log-probabilities and those of the {@code top} most likely
   * tokens.
   *
   * @param top -1 for none, else 0 to {@value #MAX_LOGPROBS}
   * @return a copy
   */
  public Sampling withLogprobs(int top) {
    return new Sampling(
        temperature, topP, topK, seed, top, penalties, logitBias, minTokens, promptLogprobs);
  }

  /**
   * The same choices after these penalties.
   *
   * @param penalties the penalties
   * @return a copy
   */
  public Sampling withPenalties(Penalties penalties) {
    return new Sampling(
        temperature, topP, topK, seed, logprobs, penalties, logitBias, minTokens, promptLogprobs);
  }

  /**
   * The same choices after this logit bias.
   *
   * @param bias the bias
   * @return a copy
   */
  public Sampling withLogitBias(LogitBias bias) {
    return new Sampling(
        temperature, topP, topK, seed, logprobs, penalties, bias, minTokens, promptLogprobs);
  }

  /**
   * The same choices, holding these tokens back.
   *
   * @param held the held-back tokens
   * @return a copy
   */
  public Sampling withMinTokens(MinTokens held) {
    return new Sampling(
        temperature, topP, topK, seed, logprobs, penalties, logitBias, held, promptLogprobs);
  }

  /**
   * The same choices, reporting the prompt's log-probabilities too, or not.
   *
   * @param prompt whether to report them; true needs {@code logprobs} of at least 0
   * @return a copy
   */
  public Sampling withPromptLogprobs(boolean prompt) {
    return new Sampling(
        temperature, topP, topK, seed, logprobs, penalties, logitBias, minTokens, prompt);
  }

  /**
   * Whether the logits are changed before the choice (penalties, a bias or held-back tokens).
   *
   * @return false for the model's own logits
   */
  public boolean adjustsLogits() {
    return !penalties.none() || !logitBias.none() || !minTokens.none();
  }

  /**
   * Whether this is greedy decoding: temperature 0, or a single candidate ({@code topK} 1).
   *
   * @return whether the largest logit is always taken
   */
  public boolean greedy() {
    return temperature == 0 || topK == 1;
  }
}
