package io.kvtier.core.rank;

import java.util.Arrays;
import java.util.Collection;

/**
 * The tokens that would end a request, held back until it has generated {@code count} tokens
 * (vLLM's {@code min_tokens}): while fewer are generated, their logits are negative infinity, so
 * no choice, greedy or sampled, takes one. Applied after the {@link LogitBias} (no bias lifts
 * the ban) and before the {@link Penalties}, as vLLM's min-tokens processor applies it; the
 * log-probabilities a request asks for stay the model's own. A pure function of the position, so
 * every rank, the cache and speculative verification hold back the same tokens.
 *
 * @param count the tokens generated before any of {@code tokens} may be chosen, at least 0
 * @param tokens the held-back token ids (the model's end tokens and the request's stop token
 *     ids), ascending, distinct, each at least 0, at most {@value #MAX_TOKENS}
 */
public record MinTokens(int count, int[] tokens) {

  /** Nothing held back. */
  public static final MinTokens NONE = new MinTokens(0, new int[0]);

  /**
   * The most tokens one request may hold back: a model's few end tokens and up to 1,024 stop
   * token ids fit.
   */
  public static final int MAX_TOKENS = 2048;

  /** Validates and copies the ids; a rule that holds nothing back is {@link #NONE}'s. */
  public MinTokens {
    tokens = tokens.clone();
    if (count < 0) {
      throw new IllegalArgumentException("count=" + count + " must be at least 0");
    }
    if (tokens.length > MAX_TOKENS) {
      throw new IllegalArgumentException(
          tokens.length + " held-back tokens: at most " + MAX_TOKENS);
    }
    TokenIds.checkAscending(tokens);
    if (count == 0 || tokens.length == 0) {
      count = 0;
      tokens = new int[0];
    }
  }

  /**
   * Holds these tokens back for the first {@code count} generated.
   *
   * @param count the tokens generated first, at least 0
   * @param tokens the ids, in any order, repeats allowed
   * @return the rule, equal to {@link #NONE} where it holds nothing back (a count of 0 or no
   *     token)
   */
  public static MinTokens of(int count, Collection<Integer> tokens) {
    return new MinTokens(
        count, tokens.stream().mapToInt(Integer::intValue).sorted().distinct().toArray());
  }

  /**
   * Whether this holds nothing back.
   *
   * @return a count of 0 or no token
   */
  public boolean none() {
    return count == 0 || tokens.length == 0;
  }

  /**
   * The largest token id held back, -1 for none (a model checks it against its vocabulary).
   *
   * @return the id
   */
  public int largestToken() {
    return tokens.length == 0 ? -1 : tokens[tokens.length - 1];
  }

  /**
   * Bans the tokens in {@code row[0, length)} while fewer than {@code count} are generated; ids at
   * or past {@code length} are skipped.
   *
   * @param row the logits of the token at {@code generated}
   * @param length the vocabulary size
   * @param generated the tokens the request generated before this one
   */
  void apply(float[] row, int length, int generated) {
    if (generated >= count) {
      return;
    }
    for (int i = 0; i < tokens.length && tokens[i] < length; i++) {
      row[tokens[i]] = Float.NEGATIVE_INFINITY;
    }
  }

  /**
   * The held-back ids.
   *
   * @return a copy
   */
  @Override
  public int[] tokens() {
    return tokens.clone();
  }

  /** Equal when the same tokens are held back as long. */
  @Override
  public boolean equals(Object o) {
    return o instanceof MinTokens m && count == m.count && Arrays.equals(tokens, m.tokens);
  }

  @Override
  public int hashCode() {
    return 31 * count + Arrays.hashCode(tokens);
  }

  @Override
  public String toString() {
    return "MinTokens{" + count + " before " + Arrays.toString(tokens) + "}";
  }
}
