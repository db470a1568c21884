package io.kvtier.model.tiny;

import io.kvtier.core.rank.ModelRunner;
import io.kvtier.serving.RankShard;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.KvLayout;
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
public final class TinyTransformer implements ServingModel {
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

  @Override
  public int vocabularySize() {
    return config.vocabSize();
  }

  @Override
  public int maxContext() {
    return config.maxContext();
  }

  /** {@link TinyText}: bytes, and the tiny chat format. */
  @Override
  public TinyText text() {
    return TinyText.INSTANCE;
  }

  @Override
  public void checkLayout(KvLayout layout, int ranks) {
    config.checkLayout(layout);
    config.checkShards(ranks);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Those of {@link TinyModelRunner#snapshotSlots(ModelConfig, KvLayout)}.
   */
  @Override
  public int snapshotSlots(KvLayout rankLayout, int devicePages) {
    int slots = TinyModelRunner.snapshotSlots(config, rankLayout);
    if (slots > 0 && slots >= devicePages) {
      throw new IllegalArgumentException(
          "a state snapshot of the model's layers "
              + config.layerMix()
              + (config.windowedSwa() ? " (with their SWA windows)" : "")
              + " takes "
              + slots
              + " page slots, but the device pool has "
              + devicePages
              + " pages (kvtier.device-pages): give kvtier.device-pages well above "
              + slots
              + (config.windowedSwa()
                  ? ", larger pages, or keep SWA pages (--swa-cache pages)"
                  : " or larger pages"));
    }
    return slots;
  }

  /**
   * {@inheritDoc}
   *
   * <p>A {@link TinyModelRunner} on the rank's shard of the heads, summing its partial outputs
   * through the engine's collective.
   */
  @Override
  public ModelRunner openRunner(RankShard shard) {
    TinyModelRunner runner = new TinyModelRunner(this, shard.device(), shard.rank(), shard.ranks());
    shard.whenJoined(runner::combineThrough);
    return runner;
  }
}
