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
 */
public record Sampling(float temperature, float topP, int topK, long seed) {

  /** Greedy decoding: the largest logit, the lowest token id on ties. */
  public static final Sampling GREEDY = new Sampling(0, 1, 0, 0);

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
