package io.kvtier.core.rank;

import java.util.Objects;

/**
 * The log-probability of a chosen token under the model's distribution at its position (the
 * log-softmax of the raw logits, before temperature, top-k or top-p), and those of the most
 * likely tokens there, most likely first (the lower id first on ties).
 *
 * @param token the token chosen
 * @param logprob its natural-log probability, at most 0
 * @param topTokens the most likely tokens, as many as the request asked for (maybe none)
 * @param topLogprobs their log-probabilities, the same length, descending
 */
public record TokenLogprob(int token, float logprob, int[] topTokens, float[] topLogprobs) {

  /** Validates and copies the arrays. */
  public TokenLogprob {
    Objects.requireNonNull(topTokens, "topTokens");
    Objects.requireNonNull(topLogprobs, "topLogprobs");
    if (topTokens.length != topLogprobs.length) {
      throw new IllegalArgumentException(
          topTokens.length + " top tokens but " + topLogprobs.length + " log-probabilities");
    }
    topTokens = topTokens.clone();
    topLogprobs = topLogprobs.clone();
  }

  /**
   * The most likely tokens.
   *
   * @return a copy
   */
  @Override
  public int[] topTokens() {
    return topTokens.clone();
  }

  /**
   * Their log-probabilities.
   *
   * @return a copy
   */
  @Override
  public float[] topLogprobs() {
    return topLogprobs.clone();
  }
}
