package io.kvtier.cli.model;

import java.util.Objects;

/**
 * What {@link ModelEngine#generate} produced for one request, and where its prompt's KV came from.
 *
 * @param tokens the generated token ids
 * @param cachedTokens prompt tokens whose KV came from the cache (device hits, host load-backs
 *     and L3 hits), not computed
 * @param deviceHitTokens of those, tokens already on the device
 * @param hostHitTokens of those, tokens loaded back from the host tier that were there before the
 *     request came (L3 hits excluded)
 * @param l3HitTokens of those, tokens an L3 prefetch fetched from the store into the host tier
 *     for this request, then loaded back to the device
 */
public record Completion(
    int[] tokens, int cachedTokens, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {

  /** Validates the fields and copies the tokens. */
  public Completion {
    tokens = Objects.requireNonNull(tokens, "tokens").clone();
    if (deviceHitTokens < 0
        || hostHitTokens < 0
        || l3HitTokens < 0
        || cachedTokens != deviceHitTokens + hostHitTokens + l3HitTokens) {
      throw new IllegalArgumentException(
          "cachedTokens="
              + cachedTokens
              + " must be deviceHitTokens="
              + deviceHitTokens
              + " + hostHitTokens="
              + hostHitTokens
              + " + l3HitTokens="
              + l3HitTokens
              + ", none negative");
    }
  }

  /**
   * A completion without an L3 tier.
   *
   * @param tokens the generated token ids
   * @param cachedTokens {@code deviceHitTokens + hostHitTokens}
   * @param deviceHitTokens tokens already on the device
   * @param hostHitTokens tokens loaded back from the host tier
   */
  public Completion(int[] tokens, int cachedTokens, int deviceHitTokens, int hostHitTokens) {
    this(tokens, cachedTokens, deviceHitTokens, hostHitTokens, 0);
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
