package io.kvtier.model.tiny;

import java.util.Arrays;
import java.util.Objects;

/**
 * The reference: generates with the same model and the same math as a cached run, but computes
 * every request's prompt from scratch with its KV in a plain array. The end-to-end tests compare
 * every cached run against it token for token. Not thread-safe; one per thread.
 */
public final class NoCacheRunner {
  private final TinyTransformer model;
  private final ForwardPass pass;
  private final ArrayKv kv;

  /**
   * Creates a runner.
   *
   * @param model the model
   */
  public NoCacheRunner(TinyTransformer model) {
    this.model = Objects.requireNonNull(model, "model");
    this.pass = model.newForwardPass();
    this.kv = new ArrayKv(model.config());
  }

  /**
   * Greedily generates {@code maxTokens} tokens after {@code prompt}.
   *
   * @param prompt the prompt's token ids, not empty
   * @param maxTokens tokens to generate, at least 1
   * @return the generated tokens
   * @throws IllegalArgumentException if the request does not fit the model
   */
  public int[] generate(int[] prompt, int maxTokens) {
    model.checkRequest(prompt, maxTokens, model.config().maxContext());
    int[] sequence = Arrays.copyOf(prompt, prompt.length + maxTokens);
    try {
      int next = pass.forward(sequence, 0, prompt.length, kv, LayerGate.OPEN);
      for (int i = 0; i < maxTokens; i++) {
        int position = prompt.length + i;
        sequence[position] = next;
        if (i + 1 < maxTokens) {
          next = pass.forward(sequence, position, position + 1, kv, LayerGate.OPEN);
        }
      }
    } catch (InterruptedException e) {
      // The open gate never waits, so nothing can interrupt it; keep the flag for the caller.
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while generating", e);
    }
    return Arrays.copyOfRange(sequence, prompt.length, sequence.length);
  }
}
