package io.kvtier.cli.model;

import java.util.Objects;

/**
 * A tiny decoder-only transformer in plain Java, the "model" of {@code kvtier serve} and of the
 * end-to-end tests: seeded random weights ({@link TinyWeights}), rotary positions over absolute
 * token positions (so that a cached prefix's KV is valid for any request that shares it), RMSNorm,
 * causal multi-head attention over the K and V of a {@link KvSequence}, a ReLU MLP, and greedy
 * decoding (argmax, ties to the lowest token id).
 *
 * <p>Determinism is the point: a token's K and V are computed from its own hidden state only, and
 * every sum runs in a fixed order (attention in position order), so the KV of a position and the
 * generated tokens are the same bits whether a prefix came from the cache or was computed now,
 * whatever the chunking. The model is immutable and thread-safe; computing needs a {@link
 * ForwardPass}, one per thread.
 */
public final class TinyTransformer {
  /** Base of the rotary frequencies, as in RoFormer. */
  private static final double ROTARY_BASE = 10_000.0;

  final ModelConfig config;
  final TinyWeights weights;

  /** Rotary cosines and sines, {@code [maxContext][headDim / 2]}. */
  final float[] cos;

  final float[] sin;

  /**
   * Creates the model of a config, drawing its weights from the config's seed.
   *
   * @param config the shape and the seed
   */
  public TinyTransformer(ModelConfig config) {
    this(TinyWeights.random(config));
  }

  /**
   * Creates the model over given weights.
   *
   * @param weights the weights
   */
  public TinyTransformer(TinyWeights weights) {
    this.weights = Objects.requireNonNull(weights, "weights");
    this.config = weights.config();
    int half = config.headDim() / 2;
    cos = new float[config.maxContext() * half];
    sin = new float[config.maxContext() * half];
    for (int pos = 0; pos < config.maxContext(); pos++) {
      for (int i = 0; i < half; i++) {
        // StrictMath: the table must not depend on which JIT tier or CPU computed it.
        double angle = pos * StrictMath.pow(ROTARY_BASE, -2.0 * i / config.headDim());
        cos[pos * half + i] = (float) StrictMath.cos(angle);
        sin[pos * half + i] = (float) StrictMath.sin(angle);
      }
    }
  }

  /**
   * The model's shape.
   *
   * @return the config
   */
  public ModelConfig config() {
    return config;
  }

  /**
   * A new workspace to run the model in; not thread-safe, reusable across sequences.
   *
   * @return the workspace
   */
  public ForwardPass newForwardPass() {
    return new ForwardPass(this);
  }

  /**
   * Checks that a request fits the model: a non-empty prompt of vocabulary tokens whose length
   * plus {@code maxTokens} is within the context.
   *
   * @param prompt the prompt's token ids
   * @param maxTokens tokens to generate
   * @param contextLimit the most tokens of one sequence, at most {@code config().maxContext()}
   * @throws IllegalArgumentException naming what is wrong and the limit
   */
  public void checkRequest(int[] prompt, int maxTokens, int contextLimit) {
    Objects.requireNonNull(prompt, "prompt");
    if (prompt.length == 0) {
      throw new IllegalArgumentException("the prompt is empty: give at least one token");
    }
    if (maxTokens < 1) {
      throw new IllegalArgumentException("max_tokens=" + maxTokens + " must be >= 1");
    }
    for (int i = 0; i < prompt.length; i++) {
      if (prompt[i] < 0 || prompt[i] >= config.vocabSize()) {
        throw new IllegalArgumentException(
            "token "
                + prompt[i]
                + " at index "
                + i
                + " is outside the vocabulary [0, "
                + config.vocabSize()
                + ")");
      }
    }
    long total = (long) prompt.length + maxTokens;
    int limit = Math.min(contextLimit, config.maxContext());
    if (total > limit) {
      throw new IllegalArgumentException(
          "prompt of "
              + prompt.length
              + " tokens + max_tokens="
              + maxTokens
              + " = "
              + total
              + " tokens exceeds the context limit of "
              + limit
              + " tokens: shorten the prompt or ask for fewer tokens");
    }
  }
}
