package io.kvtier.core.rank;

/**
 * Checks of the token-id lists that a request's sampling carries ({@link LogitBias}, {@link
 * MinTokens}).
 */
final class TokenIds {
  private TokenIds() {}

  /**
   * Checks that the ids are at least 0, ascending and distinct.
   *
   * @param tokens the ids
   * @throws IllegalArgumentException naming the first id out of order, and its index
   */
  static void checkAscending(int[] tokens) {
    for (int i = 0; i < tokens.length; i++) {
      if (tokens[i] < 0 || (i > 0 && tokens[i] <= tokens[i - 1])) {
        throw new IllegalArgumentException(
            "token "
                + tokens[i]
                + " at "
                + i
                + ": the ids must be at least 0, ascending, distinct");
      }
    }
  }
}
