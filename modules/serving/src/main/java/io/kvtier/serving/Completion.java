package io.kvtier.serving;

import io.kvtier.core.rank.TokenLogprob;
import java.util.List;
import java.util.Objects;

/**
 * What {@link ModelEngine#generate} produced for one request, and where its prompt's KV came from.
 *
 * <p>The hit counts per tier are the cache's match ({@link #matchedTokens()}); {@code
 * cachedTokens} is the usable part of it, the prompt tokens the model did not compute. The two
 * are equal unless the model cannot resume exactly from all of a matched prefix: with recurrent
 * layers it resumes at the deepest recurrent-state snapshot of the match (docs/HYBRID.md §5),
 * and {@code cachedTokens} counts the prefix up to there, the engine's usable length.
 *
 * @param tokens the generated token ids
 * @param cachedTokens prompt tokens whose KV came from the cache and that the model did not
 *     compute (the usable prefix), at most {@code deviceHitTokens + hostHitTokens + l3HitTokens}
 * @param deviceHitTokens matched tokens already on the device
 * @param hostHitTokens matched tokens loaded back from the host tier that were there before the
 *     request came (L3 hits excluded)
 * @param l3HitTokens matched tokens an L3 prefetch fetched from the store into the host tier for
 *     this request, then loaded back to the device
 * @param transfer what its part in a prompt KV transfer between replicas did; {@link
 *     TransferOutcome#NONE} without one
 * @param logprobs each generated token's log-probabilities where the request asked for them
 *     ({@link io.kvtier.core.rank.Sampling#logprobs()}), one per token; empty otherwise
 * @param promptLogprobs the prompt's tokens' log-probabilities, from its second token on, where
 *     the request asked for them ({@link io.kvtier.core.rank.Sampling#promptLogprobs()}); empty
 *     otherwise
 */
public record Completion(
    int[] tokens,
    int cachedTokens,
    int deviceHitTokens,
    int hostHitTokens,
    int l3HitTokens,
    TransferOutcome transfer,
    List<TokenLogprob> logprobs,
    List<TokenLogprob> promptLogprobs) {

  /** Validates the fields and copies the tokens. */
  public Completion {
    tokens = Objects.requireNonNull(tokens, "tokens").clone();
    Objects.requireNonNull(transfer, "transfer");
    logprobs = List.copyOf(logprobs);
    promptLogprobs = List.copyOf(promptLogprobs);
    if (!logprobs.isEmpty() && logprobs.size() != tokens.length) {
      throw new IllegalArgumentException(
          logprobs.size() + " log-probabilities for " + tokens.length + " tokens");
    }
    if (deviceHitTokens < 0
        || hostHitTokens < 0
        || l3HitTokens < 0
        || cachedTokens < 0
        || cachedTokens > (long) deviceHitTokens + hostHitTokens + l3HitTokens) {
      throw new IllegalArgumentException(
          "cachedTokens="
              + cachedTokens
              + " must be at most the matched deviceHitTokens="
              + deviceHitTokens
              + " + hostHitTokens="
              + hostHitTokens
              + " + l3HitTokens="
              + l3HitTokens
              + ", none negative");
    }
  }

  /**
   * A completion without prompt log-probabilities.
   *
   * @param tokens the generated token ids
   * @param cachedTokens the usable prefix
   * @param deviceHitTokens matched tokens on the device
   * @param hostHitTokens matched tokens loaded back from the host tier
   * @param l3HitTokens matched tokens fetched from L3
   * @param transfer what its part in a prompt KV transfer did
   * @param logprobs each generated token's log-probabilities, or none
   */
  public Completion(
      int[] tokens,
      int cachedTokens,
      int deviceHitTokens,
      int hostHitTokens,
      int l3HitTokens,
      TransferOutcome transfer,
      List<TokenLogprob> logprobs) {
    this(
        tokens,
        cachedTokens,
        deviceHitTokens,
        hostHitTokens,
        l3HitTokens,
        transfer,
        logprobs,
        List.of());
  }

  /**
   * A completion without log-probabilities.
   *
   * @param tokens the generated token ids
   * @param cachedTokens the usable prefix
   * @param deviceHitTokens matched tokens on the device
   * @param hostHitTokens matched tokens loaded back from the host tier
   * @param l3HitTokens matched tokens fetched from L3
   * @param transfer what its part in a prompt KV transfer did
   */
  public Completion(
      int[] tokens,
      int cachedTokens,
      int deviceHitTokens,
      int hostHitTokens,
      int l3HitTokens,
      TransferOutcome transfer) {
    this(tokens, cachedTokens, deviceHitTokens, hostHitTokens, l3HitTokens, transfer, List.of());
  }

  /**
   * A completion without a transfer.
   *
   * @param tokens the generated token ids
   * @param cachedTokens the usable prefix
   * @param deviceHitTokens matched tokens on the device
   * @param hostHitTokens matched tokens loaded back from the host tier
   * @param l3HitTokens matched tokens fetched from L3
   */
  public Completion(
      int[] tokens, int cachedTokens, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {
    this(tokens, cachedTokens, deviceHitTokens, hostHitTokens, l3HitTokens, TransferOutcome.NONE);
  }

  /**
   * The prompt tokens the cache matched, in every tier: at least {@link #cachedTokens()}.
   *
   * @return {@code deviceHitTokens + hostHitTokens + l3HitTokens}
   */
  public int matchedTokens() {
    return deviceHitTokens + hostHitTokens + l3HitTokens;
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
