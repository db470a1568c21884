package io.kvtier.examples.model;

import java.util.Objects;

/**
 * What {@link ModelEngine#generate} produced for one request, and where its prompt's KV came from.
 *
 * @param tokens the generated token ids
 * @param cachedTokens prompt tokens whose KV came from the cache (device hits plus host
 *     load-backs), not computed
 * @param deviceHitTokens of those, tokens already on the device
 * @param hostHitTokens of those, tokens loaded back from the host tier
 */
public record Completion(int[] tokens, int cachedTokens, int deviceHitTokens, int hostHitTokens) {

  /** Validates the fields and copies the tokens. */
  public Completion {
    tokens = Objects.requireNonNull(tokens, "tokens").clone();
    if (deviceHitTokens < 0 || hostHitTokens < 0
        || cachedTokens != deviceHitTokens + hostHitTokens) {
      throw new IllegalArgumentException("cachedTokens=" + cachedTokens
          + " must be deviceHitTokens=" + deviceHitTokens + " + hostHitTokens=" + hostHitTokens
          + ", none negative");
    }
  }

  /**
   * The generated tokens.
   *
   * @return a copy
   */
  @Override
  public int[] tokens() {
    return tokens.clone();
  }
}
