package io.kvtier.core.rank;

import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/**
 * Biases added to chosen tokens' logits before any choice (OpenAI's {@code logit_bias}): -100
 * all but bans a token, 100 all but forces it. Applied first, then {@link Penalties}, as vLLM
 * applies them; the log-probabilities a request asks for stay the model's own.
 *
 * @param tokens the token ids, ascending, distinct, each at least 0
 * @param biases their biases, each in [-100, 100], as many as the tokens
 */
public record LogitBias(int[] tokens, float[] biases) {

  /** No bias. */
  public static final LogitBias NONE = new LogitBias(new int[0], new float[0]);

  /** The most tokens one request may bias. */
  public static final int MAX_TOKENS = 1024;

  /** Validates and copies the arrays. */
  public LogitBias {
    tokens = tokens.clone();
    biases = biases.clone();
    if (tokens.length != biases.length) {
      throw new IllegalArgumentException(
          tokens.length + " tokens but " + biases.length + " biases");
    }
    if (tokens.length > MAX_TOKENS) {
      throw new IllegalArgumentException(tokens.length + " biased tokens: at most " + MAX_TOKENS);
    }
    TokenIds.checkAscending(tokens);
    for (int i = 0; i < tokens.length; i++) {
      if (!(biases[i] >= -100 && biases[i] <= 100)) {
        throw new IllegalArgumentException(
            "the bias of token " + tokens[i] + " is " + biases[i] + ": give -100 to 100");
      }
    }
  }

  /**
   * The biases of a map of token ids.
   *
   * @param biases each token's bias
   * @return the bias, {@link #NONE} for an empty map
   */
  public static LogitBias of(Map<Integer, Float> biases) {
    TreeMap<Integer, Float> sorted = new TreeMap<>(biases);
    int[] tokens = new int[sorted.size()];
    float[] values = new float[sorted.size()];
    int i = 0;
    for (Map.Entry<Integer, Float> e : sorted.entrySet()) {
      tokens[i] = e.getKey();
      values[i++] = e.getValue();
    }
    return tokens.length == 0 ? NONE : new LogitBias(tokens, values);
  }

  /**
   * Whether this biases nothing.
   *
   * @return no token
   */
  public boolean none() {
    return tokens.length == 0;
  }

  /**
   * The largest token id biased, -1 for none (a model checks it against its vocabulary).
   *
   * @return the id
   */
  public int largestToken() {
    return tokens.length == 0 ? -1 : tokens[tokens.length - 1];
  }

  /** Adds the biases to {@code row[0, length)}; ids at or past {@code length} are skipped. */
  void apply(float[] row, int length) {
    for (int i = 0; i < tokens.length && tokens[i] < length; i++) {
      row[tokens[i]] += biases[i];
    }
  }

  /**
   * The token ids.
   *
   * @return a copy
   */
  @Override
  public int[] tokens() {
    return tokens.clone();
  }

  /**
   * Their biases.
   *
   * @return a copy
   */
  @Override
  public float[] biases() {
    return biases.clone();
  }

  /** Equal when the same tokens have the same biases. */
  @Override
  public boolean equals(Object o) {
    return o instanceof LogitBias b
        && Arrays.equals(tokens, b.tokens)
        && Arrays.equals(biases, b.biases);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(tokens) + Arrays.hashCode(biases);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("LogitBias{");
    for (int i = 0; i < tokens.length; i++) {
      s.append(i == 0 ? "" : ", ").append(tokens[i]).append('=').append(biases[i]);
    }
    return s.append('}').toString();
  }
}
