package io.kvtier.model.tiny;

import io.kvtier.core.config.LayerMix;
import io.kvtier.spi.KvLayout;
import java.util.Objects;

/**
 * The shape of the {@link TinyTransformer}: a decoder-only transformer with rotary positions,
 * RMSNorm, multi-head attention (one KV head per query head) and a two-layer ReLU MLP, its
 * weights drawn from {@code seed}. Each layer's mixer is full attention, sliding-window attention
 * or a recurrent layer ({@link LayerMix}); every layer has its MLP.
 *
 * @param vocabSize token ids are in {@code [0, vocabSize)}, at least 2
 * @param layers transformer layers, at least 1
 * @param heads attention heads (each also a KV head), at least 1
 * @param headDim elements per head, even (rotary pairs), at least 2
 * @param mlpDim hidden width of the MLP, at least 1
 * @param maxContext the most tokens of one sequence (prompt plus output), at least 2
 * @param seed the seed of the weights
 * @param layerMix the kind of each layer, {@code layers} of them
 * @param windowedSwa whether the cache keeps SWA layers' KV only as windows of their last {@code
 *     W - 1} positions at snapshot positions, and no SWA (nor recurrent) blocks in the pages
 *     (docs/HYBRID.md §4); false keeps every SWA page with the full-attention KV
 */
public record ModelConfig(
    int vocabSize,
    int layers,
    int heads,
    int headDim,
    int mlpDim,
    int maxContext,
    long seed,
    LayerMix layerMix,
    boolean windowedSwa) {

  /** Default vocabulary. */
  public static final int DEFAULT_VOCAB_SIZE = 512;

  /** Default layer count. */
  public static final int DEFAULT_LAYERS = 2;

  /** Default head count. */
  public static final int DEFAULT_HEADS = 4;

  /** Default head width. */
  public static final int DEFAULT_HEAD_DIM = 16;

  /** Default MLP width: twice the model width. */
  public static final int DEFAULT_MLP_DIM = 128;

  /** Default context limit. */
  public static final int DEFAULT_MAX_CONTEXT = 1024;

  /** Default weight seed. */
  public static final long DEFAULT_SEED = 42L;

  /** The defaults: vocabulary 512, 2 layers, 4 heads of 16, MLP 128, context 1024, seed 42. */
  public static final ModelConfig DEFAULTS =
      new ModelConfig(
          DEFAULT_VOCAB_SIZE,
          DEFAULT_LAYERS,
          DEFAULT_HEADS,
          DEFAULT_HEAD_DIM,
          DEFAULT_MLP_DIM,
          DEFAULT_MAX_CONTEXT,
          DEFAULT_SEED);

  /** Validates the fields; each message names the field and its value. */
  public ModelConfig {
    atLeast("vocabSize", vocabSize, 2);
    atLeast("layers", layers, 1);
    Objects.requireNonNull(layerMix, "layerMix");
    if (layerMix.size() != layers) {
      throw new IllegalArgumentException(
          "the layer mix '"
              + layerMix
              + "' has "
              + layerMix.size()
              + " layers but layers="
              + layers
              + ": give one layer kind per layer (withLayerMix sets both)");
    }
    if (windowedSwa && !layerMix.hasSwa()) {
      throw new IllegalArgumentException(
          "SWA windows are asked for but the layer mix '"
              + layerMix
              + "' has no swa:W layer: keep SWA pages (the default), or give a mix with an SWA"
              + " layer such as full,swa:64");
    }
    atLeast("heads", heads, 1);
    atLeast("headDim", headDim, 2);
    atLeast("mlpDim", mlpDim, 1);
    atLeast("maxContext", maxContext, 2);
    if (headDim % 2 != 0) {
      throw new IllegalArgumentException(
          "headDim=" + headDim + " must be even: rotary positions rotate pairs of elements");
    }
    // The weight arrays are single Java arrays: keep each within an int index.
    long largest =
        Math.max(
            (long) vocabSize * heads * headDim,
            Math.max((long) heads * headDim * heads * headDim, (long) heads * headDim * mlpDim));
    if (largest > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "model too large: a weight matrix of "
              + largest
              + " elements does not fit a Java array; use a smaller vocabulary or width");
    }
  }

  /**
   * A config whose every layer is full attention.
   *
   * @param vocabSize token ids are in {@code [0, vocabSize)}, at least 2
   * @param layers transformer layers, at least 1
   * @param heads attention heads (each also a KV head), at least 1
   * @param headDim elements per head, even (rotary pairs), at least 2
   * @param mlpDim hidden width of the MLP, at least 1
   * @param maxContext the most tokens of one sequence (prompt plus output), at least 2
   * @param seed the seed of the weights
   */
  public ModelConfig(
      int vocabSize, int layers, int heads, int headDim, int mlpDim, int maxContext, long seed) {
    this(
        vocabSize,
        layers,
        heads,
        headDim,
        mlpDim,
        maxContext,
        seed,
        LayerMix.full(Math.max(1, layers)));
  }

  /**
   * A config whose SWA layers, if any, keep every page.
   *
   * @param vocabSize token ids are in {@code [0, vocabSize)}, at least 2
   * @param layers transformer layers, at least 1
   * @param heads attention heads (each also a KV head), at least 1
   * @param headDim elements per head, even (rotary pairs), at least 2
   * @param mlpDim hidden width of the MLP, at least 1
   * @param maxContext the most tokens of one sequence (prompt plus output), at least 2
   * @param seed the seed of the weights
   * @param layerMix the kind of each layer
   */
  public ModelConfig(
      int vocabSize,
      int layers,
      int heads,
      int headDim,
      int mlpDim,
      int maxContext,
      long seed,
      LayerMix layerMix) {
    this(vocabSize, layers, heads, headDim, mlpDim, maxContext, seed, layerMix, false);
  }

  private static void atLeast(String name, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException(name + "=" + value + " must be >= " + min);
    }
  }

  /**
   * The model width.
   *
   * @return {@code heads * headDim}
   */
  public int modelDim() {
    return heads * headDim;
  }

  /**
   * This config with another seed.
   *
   * @param newSeed the seed of the weights
   * @return a copy
   */
  public ModelConfig withSeed(long newSeed) {
    return new ModelConfig(
        vocabSize, layers, heads, headDim, mlpDim, maxContext, newSeed, layerMix, windowedSwa);
  }

  /**
   * This config with another number of full-attention layers.
   *
   * @param newLayers layers, at least 1
   * @return a copy
   * @throws IllegalArgumentException if this config's layers are not all full attention, whose
   *     kinds a new count would drop: use {@link #withLayerMix}
   */
  public ModelConfig withLayers(int newLayers) {
    if (!layerMix.allFull()) {
      throw new IllegalArgumentException(
          "layers="
              + newLayers
              + " would drop the layer mix '"
              + layerMix
              + "': set the layers with withLayerMix");
    }
    return new ModelConfig(
        vocabSize, newLayers, heads, headDim, mlpDim, maxContext, seed, LayerMix.full(newLayers));
  }

  /**
   * This config with another layer mix, and as many layers as the mix has.
   *
   * @param mix the kind of each layer
   * @return a copy
   */
  public ModelConfig withLayerMix(LayerMix mix) {
    Objects.requireNonNull(mix, "mix");
    return new ModelConfig(
        vocabSize, mix.size(), heads, headDim, mlpDim, maxContext, seed, mix, windowedSwa);
  }

  /**
   * This config with SWA KV kept as windows at snapshot positions, or as pages.
   *
   * @param windowed true for windows (the mix must have an SWA layer)
   * @return a copy
   */
  public ModelConfig withWindowedSwa(boolean windowed) {
    return new ModelConfig(
        vocabSize, layers, heads, headDim, mlpDim, maxContext, seed, layerMix, windowed);
  }

  /**
   * The blocks of a page slot: one per layer, or with {@link #windowedSwa} one per
   * full-attention layer ({@link LayerMix#pageLayers}).
   *
   * @return at least 1
   */
  public int pageLayers() {
    return layerMix.pageLayers(windowedSwa);
  }

  /**
   * Whether a cached prefix is usable only at a state snapshot ({@link
   * LayerMix#needsSnapshots}).
   *
   * @return true with a recurrent layer, or with SWA windows
   */
  public boolean needsSnapshots() {
    return layerMix.needsSnapshots(windowedSwa);
  }

  /**
   * The model id for L3 keys ({@code kvtier.l3-model-id}): pages of models with other weights or
   * another layer mix must never be read as this model's. An all-full-attention model keeps the
   * id it had before layer mixes ({@code tiny-transformer-seed-S}).
   *
   * @return {@code tiny-transformer-seed-S}, with {@code -layers-MIX} for any other mix and
   *     {@code -swa-windows} with SWA windows (their pages and snapshots differ)
   */
  public String l3ModelId() {
    return "tiny-transformer-seed-"
        + seed
        + (layerMix.allFull() ? "" : "-layers-" + layerMix)
        + (windowedSwa ? "-swa-windows" : "");
  }

  /**
   * This config with another context limit.
   *
   * @param tokens the most tokens of one sequence
   * @return a copy
   */
  public ModelConfig withMaxContext(int tokens) {
    return new ModelConfig(
        vocabSize, layers, heads, headDim, mlpDim, tokens, seed, layerMix, windowedSwa);
  }

  /**
   * The KV layout of this model's pages: fp32 K and V of every head in every layer (with SWA
   * windows, in every full-attention layer: {@link #pageLayers}).
   *
   * @param pageSize tokens per page
   * @return {@code (pageLayers(), heads, headDim, 4, pageSize)}
   */
  public KvLayout kvLayout(int pageSize) {
    return new KvLayout(pageLayers(), heads, headDim, Float.BYTES, pageSize);
  }

  /**
   * Checks that the heads split evenly over a tensor-parallel group.
   *
   * @param ranks the ranks, each holding {@code heads / ranks} heads
   * @throws IllegalArgumentException naming the head count and the rank count
   */
  public void checkShards(int ranks) {
    if (ranks < 1 || heads % ranks != 0) {
      throw new IllegalArgumentException(
          "ranks="
              + ranks
              + " does not divide the tiny transformer's "
              + heads
              + " attention heads: each rank holds an equal shard of the KV heads; use a"
              + " divisor of "
              + heads);
    }
  }

  /**
   * The KV layout of one rank's pages in a tensor-parallel group: its shard of the heads.
   *
   * @param pageSize tokens per page
   * @param ranks the ranks, dividing the head count
   * @return {@code (pageLayers(), heads / ranks, headDim, 4, pageSize)}
   */
  public KvLayout kvLayout(int pageSize, int ranks) {
    checkShards(ranks);
    return new KvLayout(pageLayers(), heads / ranks, headDim, Float.BYTES, pageSize);
  }

  /**
   * Checks that a KV layout is one rank's shard of this model's, as {@link #checkLayout(KvLayout)}.
   *
   * @param layout the layout of the pools
   * @param ranks the ranks the heads are split over
   * @throws IllegalArgumentException naming the differing fields and the fix
   */
  public void checkLayout(KvLayout layout, int ranks) {
    KvLayout expected = kvLayout(layout.pageSize(), ranks);
    if (!expected.equals(layout)) {
      throw new IllegalArgumentException(
          "the KV layout "
              + layout
              + " is not one rank's shard of the tiny transformer over "
              + ranks
              + " ranks, "
              + expected
              + ": set kvtier.layers="
              + pageLayers()
              + ", kvtier.kv-heads="
              + heads / ranks
              + ", kvtier.head-dim="
              + headDim
              + ", kvtier.dtype-bytes="
              + Float.BYTES);
    }
  }

  /**
   * Checks that a KV layout is this model's (whatever its page size), so that pages written by
   * another model or with another element type are never read as this model's KV.
   *
   * @param layout the layout of the pools
   * @throws IllegalArgumentException naming the differing fields and the fix
   */
  public void checkLayout(KvLayout layout) {
    KvLayout expected = kvLayout(layout.pageSize());
    if (!expected.equals(layout)) {
      throw new IllegalArgumentException(
          "the KV layout "
              + layout
              + " is not the tiny"
              + " transformer's "
              + expected
              + ": set kvtier.layers="
              + pageLayers()
              + ", kvtier.kv-heads="
              + heads
              + ", kvtier.head-dim="
              + headDim
              + ", kvtier.dtype-bytes="
              + Float.BYTES);
    }
  }
}
