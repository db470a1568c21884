package io.kvtier.model.llama;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufUnsupportedException;
import io.kvtier.gguf.ModelHyperparameters;

/**
 * What a file's architecture computes around the block the runner shares with llama (RMSNorm,
 * grouped-query attention with RoPE, a gated feed-forward), as llama.cpp's graph for that
 * architecture computes it:
 *
 * <ul>
 *   <li>{@code llama}: RoPE on adjacent pairs, attention scores scaled by {@code 1/sqrt(head)},
 *       SwiGLU;
 *   <li>{@code qwen2}: the same with NeoX RoPE (and the QKV biases the layer reads);
 *   <li>{@code gemma2}: NeoX RoPE; the embeddings times {@code sqrt(width)}; queries times
 *       {@code 1/sqrt(head)} after RoPE (27B: {@code 1/sqrt(width/heads)}), scores soft-capped
 *       ({@code tanh(s/c)*c}, {@code attn_logit_softcapping}, 50 by default); GELU instead of
 *       SiLU; a norm after attention and after the feed-forward; even layers attend over a
 *       sliding window of {@code attention.sliding_window} positions (4,096 by default); the
 *       logits soft-capped ({@code final_logit_softcapping}, 30 by default);
 *   <li>{@code gemma3}: gemma2's block without the score cap, with an RMSNorm of every query and
 *       key head before RoPE; five of every six layers slide over {@code attention.sliding_window}
 *       positions with RoPE base 10,000 and no scaling, the sixth attends over every position with
 *       the file's base and scaling; logits capped only where the file says so.
 * </ul>
 *
 * <p>GELU is llama.cpp's: the tanh form, read through a table of binary16 inputs and outputs
 * ({@link Kernels#gelu}).
 */
final class Family {
  private final boolean neox;
  private final float embeddingScale;
  private final float queryScale;
  private final float attentionSoftcap;
  private final float finalSoftcap;
  private final boolean gemma;
  private final boolean headNorms;
  private final int[] windows;
  private final float[] ropeBases;
  private final float[] ropeScales;

  private Family(
      boolean neox,
      float embeddingScale,
      float queryScale,
      float attentionSoftcap,
      float finalSoftcap,
      boolean gemma,
      boolean headNorms,
      int[] windows,
      float[] ropeBases,
      float[] ropeScales) {
    this.neox = neox;
    this.embeddingScale = embeddingScale;
    this.queryScale = queryScale;
    this.attentionSoftcap = attentionSoftcap;
    this.finalSoftcap = finalSoftcap;
    this.gemma = gemma;
    this.headNorms = headNorms;
    this.windows = windows;
    this.ropeBases = ropeBases;
    this.ropeScales = ropeScales;
  }

  /**
   * The family of {@code file}, whose sizes are {@code shape}.
   *
   * @throws GgufUnsupportedException for a sliding window or soft cap that is not positive,
   *     naming the key
   */
  static Family of(GgufFile file, ModelHyperparameters shape) {
    String arch = shape.architecture();
    int layers = shape.blockCount();
    int[] windows = new int[layers];
    float[] bases = new float[layers];
    float[] scales = new float[layers];
    java.util.Arrays.fill(bases, shape.ropeFreqBase());
    java.util.Arrays.fill(scales, shape.ropeScaling().factor());
    if (!arch.equals("gemma2") && !arch.equals("gemma3")) {
      return new Family(arch.equals("qwen2"), 0f, 0f, 0f, 0f, false, false, windows, bases, scales);
    }
    String p = arch + ".";
    boolean three = arch.equals("gemma3");
    // llama.cpp: gemma2's window defaults to 4,096, gemma3's must be given
    int window =
        three
            ? file.getInt(p + "attention.sliding_window")
            : file.getInt(p + "attention.sliding_window", 4096);
    positive(file, p + "attention.sliding_window", window);
    // llama.cpp's SWA layers: those with il % pattern < pattern - 1 (gemma2 2, gemma3 6)
    int pattern = three ? 6 : 2;
    for (int l = 0; l < layers; l++) {
      if (l % pattern < pattern - 1) {
        windows[l] = window;
        if (three) {
          bases[l] = 10_000f;
          scales[l] = 1f;
        }
      }
    }
    float attentionCap = three ? 0f : file.getFloat(p + "attn_logit_softcapping", 50f);
    float finalCap = file.getFloat(p + "final_logit_softcapping", three ? 0f : 30f);
    if (!three) {
      positive(file, p + "attn_logit_softcapping", attentionCap);
    }
    if (file.has(p + "final_logit_softcapping")) {
      positive(file, p + "final_logit_softcapping", finalCap);
    }
    // llama.cpp (after gemma_pytorch): the 27B models (46 layers of gemma2, 62 of gemma3) scale
    // queries by the width over the heads, the others by the head size
    int big = three ? 62 : 46;
    int scaleBy = layers == big ? shape.embeddingLength() / shape.headCount() : shape.headSize();
    float queryScale = 1f / (float) Math.sqrt((float) scaleBy);
    float embeddingScale = (float) Math.sqrt((float) shape.embeddingLength());
    return new Family(
        true,
        embeddingScale,
        queryScale,
        attentionCap,
        finalCap,
        true,
        three,
        windows,
        bases,
        scales);
  }

  private static void positive(GgufFile file, String key, float value) {
    if (!(value > 0) || !Float.isFinite(value)) {
      throw new GgufUnsupportedException(
          file.path() + ": " + key + "=" + value + " must be positive and finite");
    }
  }

  /** Whether RoPE rotates NeoX halves (qwen2, Gemma) rather than adjacent pairs (llama). */
  boolean neox() {
    return neox;
  }

  /** What the embeddings are multiplied by, or 0 for nothing (llama, qwen2). */
  float embeddingScale() {
    return embeddingScale;
  }

  /**
   * What the queries are multiplied by after RoPE, the scores then taken as they are (Gemma); 0
   * where the scores are multiplied by {@code 1/sqrt(head)} instead (llama, qwen2).
   */
  float queryScale() {
    return queryScale;
  }

  /** The attention scores' soft cap, or 0 for none. */
  float attentionSoftcap() {
    return attentionSoftcap;
  }

  /** The logits' soft cap, or 0 for none. */
  float finalSoftcap() {
    return finalSoftcap;
  }

  /** Gemma's block: GELU, and norms after attention and after the feed-forward. */
  boolean gemma() {
    return gemma;
  }

  /** Whether every query and key head is RMS-normed before RoPE (gemma3). */
  boolean headNorms() {
    return headNorms;
  }

  /**
   * The positions layer {@code l} attends over, its own included, or 0 for all of them. A
   * draft layer (one past the last) is taken as the last layer.
   */
  int window(int l) {
    return windows[Math.min(l, windows.length - 1)];
  }

  /** Layer {@code l}'s RoPE base. */
  float ropeBase(int l) {
    return ropeBases[Math.min(l, ropeBases.length - 1)];
  }

  /**
   * Layer {@code l}'s linear RoPE scaling: positions are divided by it (not the per-pair
   * frequency factors of {@code rope_freqs.weight}, {@link LlamaModel#ropeFactors}).
   */
  float ropeScale(int l) {
    return ropeScales[Math.min(l, ropeScales.length - 1)];
  }
}
