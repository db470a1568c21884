package io.kvtier.model.llama;

/**
 * Receives the logits a {@link LlamaModelRunner} decodes each next token from, for tests that
 * compare runs bit for bit (cache on and off, tiers, rank counts) and for tools that want more
 * than the greedy token. Called on the rank's scheduler thread, once per generated token on
 * every rank; it must not keep {@code logits} beyond the call unless it copies them, and must
 * be quick (it runs on the engine's step).
 */
@FunctionalInterface
public interface LogitsListener {
  /** The listener of a model served without one. */
  LogitsListener NONE = (rank, requestId, position, logits) -> {};

  /**
   * The logits of {@code position}, from which the token at {@code position + 1} is chosen.
   *
   * @param rank the rank that computed them (every rank computes the same bits)
   * @param requestId the engine's request
   * @param position the last known position of the request
   * @param logits one per vocabulary token
   */
  void logits(int rank, long requestId, int position, float[] logits);
}
