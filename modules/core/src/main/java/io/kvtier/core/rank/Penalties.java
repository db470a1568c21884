package io.kvtier.core.rank;

/**
 * Penalties on tokens a request has seen, applied to the logits before any choice (greedy too),
 * as vLLM applies them: first {@code repetition} to every token of the prompt and of the output so
 * far (a positive logit divided by it, a negative one multiplied: Hugging Face's and vLLM's
 * {@code repetition_penalty}), then for each token the output so far holds {@code c} times,
 * {@code frequency * c + presence} subtracted (OpenAI's {@code frequency_penalty} and {@code
 * presence_penalty}, which count the generated tokens only). The log-probabilities a request asks
 * for stay the model's own (raw logits).
 *
 * @param presence subtracted once from a token the output holds, -2 to 2
 * @param frequency subtracted per time the output holds a token, -2 to 2
 * @param repetition the divisor of a seen token's positive logit (multiplier of a negative one),
 *     above 0 and at most 10; 1 for none
 */
public record Penalties(float presence, float frequency, float repetition) {

  /** No penalty. */
  public static final Penalties NONE = new Penalties(0, 0, 1);

  /** Validates the fields; each message names the field and the value. */
  public Penalties {
    if (!(presence >= -2 && presence <= 2)) {
      throw new IllegalArgumentException("presence=" + presence + " must be in [-2, 2]");
    }
    if (!(frequency >= -2 && frequency <= 2)) {
      throw new IllegalArgumentException("frequency=" + frequency + " must be in [-2, 2]");
    }
    if (!(repetition > 0 && repetition <= 10)) {
      throw new IllegalArgumentException("repetition=" + repetition + " must be in (0, 10]");
    }
  }

  /**
   * Whether this changes no logit.
   *
   * @return presence and frequency 0, repetition 1
   */
  public boolean none() {
    return presence == 0 && frequency == 0 && repetition == 1;
  }

  /**
   * Applies the penalties to {@code out[0, length)}, a copy of a row, for the token at {@code
   * position} of {@code tokens}, whose first {@code promptLength} are the prompt.
   *
   * @param out the row
   * @param length the vocabulary size
   * @param tokens the request's tokens, at least {@code position} known
   * @param promptLength how many of them are the prompt
   * @param position the position the token chosen takes
   * @param counts scratch of at least {@code length} zeros, left all zero again (a decode step
   *     allocates no array of the vocabulary's size)
   */
  void apply(float[] out, int length, int[] tokens, int promptLength, int position, int[] counts) {
    if (repetition != 1) {
      for (int i = 0; i < position; i++) {
        int t = tokens[i];
        if (t >= 0 && t < length && counts[t] == 0) {
          counts[t] = 1; // seen
          out[t] = out[t] > 0 ? out[t] / repetition : out[t] * repetition;
        }
      }
      for (int i = 0; i < position; i++) {
        int t = tokens[i];
        if (t >= 0 && t < length) {
          counts[t] = 0;
        }
      }
    }
    if (presence != 0 || frequency != 0) {
      for (int i = Math.min(promptLength, position); i < position; i++) {
        int t = tokens[i];
        if (t >= 0 && t < length) {
          counts[t]++;
        }
      }
      for (int i = Math.min(promptLength, position); i < position; i++) {
        int t = tokens[i];
        if (t >= 0 && t < length && counts[t] > 0) {
          out[t] -= frequency * counts[t] + presence;
          counts[t] = 0; // once per distinct token
        }
      }
    }
  }
}
