package io.kvtier.core.rank;

import java.util.HashMap;
import java.util.Map;

/**
 * Where a model leaves the log-probabilities of a request's chosen tokens ({@link
 * Sampler#choose(float[], int, int, ModelStep, int)} records them), by position, until the engine
 * appends the token at that position and reports it with its {@link TokenLogprob}. A speculative
 * step records every position it verifies; the engine takes only those it keeps, and a later step
 * records the others again. One per request that asked ({@link Sampling#logprobs()} at least 0),
 * used on the rank's scheduler thread only; {@link #NONE} for the others records nothing.
 */
public final class TokenLogprobs {

  /** Records nothing: a request that did not ask. */
  public static final TokenLogprobs NONE = new TokenLogprobs(-1);

  private final int top;
  private final Map<Integer, TokenLogprob> byPosition = new HashMap<>();

  private TokenLogprobs(int top) {
    this.top = top;
  }

  /**
   * A record of the chosen tokens' log-probabilities and of the {@code top} most likely tokens.
   *
   * @param top the most likely tokens to report at each position, 0 to {@value
   *     Sampling#MAX_LOGPROBS}; -1 for {@link #NONE}
   * @return the record
   */
  public static TokenLogprobs of(int top) {
    if (top < 0) {
      return NONE;
    }
    if (top > Sampling.MAX_LOGPROBS) {
      throw new IllegalArgumentException(
          "top=" + top + " must be at most " + Sampling.MAX_LOGPROBS);
    }
    return new TokenLogprobs(top);
  }

  /**
   * Whether this records anything.
   *
   * @return false for {@link #NONE}
   */
  public boolean wanted() {
    return top >= 0;
  }

  /**
   * Records the log-probability of {@code token} chosen at {@code position} from the row {@code
   * logits[from, from + length)}, and the row's most likely tokens (all of them where the row is
   * shorter than the count asked); nothing for {@link #NONE}.
   *
   * @param position the token's position in the request's sequence
   * @param logits the logits
   * @param from the row's first logit
   * @param length the vocabulary size
   * @param token the token chosen, in {@code [0, length)}
   * @throws IllegalStateException if the row has a NaN or infinite logit
   */
  public void record(int position, float[] logits, int from, int length, int token) {
    if (top < 0) {
      return;
    }
    double max = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < length; i++) {
      max = Math.max(max, logits[from + i]);
    }
    double sum = 0;
    for (int i = 0; i < length; i++) {
      sum += Math.exp(logits[from + i] - max);
    }
    double logSum = max + Math.log(sum);
    if (!Double.isFinite(logSum)) {
      throw new IllegalStateException(
          "the logits at position " + position + " are not all finite: no log-probabilities");
    }
    int[] ids = new int[top];
    int n = 0;
    for (int i = 0; i < length && top > 0; i++) {
      float l = logits[from + i];
      if (n == top && !(l > logits[from + ids[n - 1]])) {
        continue; // not above the least of a full list (a tie keeps the lower id, seen first)
      }
      int at = n < top ? n++ : n - 1;
      while (at > 0 && l > logits[from + ids[at - 1]]) {
        ids[at] = ids[at - 1];
        at--;
      }
      ids[at] = i;
    }
    if (n < top) {
      ids = java.util.Arrays.copyOf(ids, n); // a vocabulary smaller than the count asked
    }
    float[] lps = new float[n];
    for (int i = 0; i < n; i++) {
      lps[i] = (float) (logits[from + ids[i]] - logSum);
    }
    byPosition.put(
        position, new TokenLogprob(token, (float) (logits[from + token] - logSum), ids, lps));
  }

  /**
   * The record of the token at {@code position}, removed.
   *
   * @param position the position
   * @return the record, or null if none was made (always for {@link #NONE})
   */
  public TokenLogprob take(int position) {
    return top < 0 ? null : byPosition.remove(position);
  }
}
