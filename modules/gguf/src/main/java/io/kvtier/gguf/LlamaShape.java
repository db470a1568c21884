package io.kvtier.gguf;

import java.util.List;
import java.util.Objects;

/**
 * The shape of a {@code llama}-architecture model (or a {@code gemma3} one, {@link #GEMMA3_1B}):
 * what {@link RandomLlamaWriter} needs to write a file whose every matrix has a real model's size.
 * The vocabulary is not part of the shape; it comes from a vocabulary file.
 *
 * @param name the shape's name ({@code smollm-135m})
 * @param blockCount transformer layers
 * @param embeddingLength the model width
 * @param headCount query heads
 * @param headCountKv key/value heads (grouped-query attention)
 * @param feedForwardLength the SwiGLU hidden width
 * @param contextLength positions the file declares
 * @param ropeFreqBase RoPE's base
 * @param tiedOutput whether the output matrix is the token embedding (no {@code output.weight})
 * @param headSize the size of one attention head: the width over the head count for most models,
 *     another size where {@code attention.key_length} says so (Mistral NeMo's 128 of 5,120 over 32)
 * @param architecture {@code llama} or {@code gemma3} (whose per-head and post norms the writer
 *     adds, and whose output is tied)
 * @param slidingWindow a {@code gemma3} shape's {@code attention.sliding_window}; 0 for llama
 */
public record LlamaShape(
    String name,
    int blockCount,
    int embeddingLength,
    int headCount,
    int headCountKv,
    int feedForwardLength,
    int contextLength,
    float ropeFreqBase,
    boolean tiedOutput,
    int headSize,
    String architecture,
    int slidingWindow) {

  /** A llama shape with heads of {@code headSize}. */
  public LlamaShape(
      String name,
      int blockCount,
      int embeddingLength,
      int headCount,
      int headCountKv,
      int feedForwardLength,
      int contextLength,
      float ropeFreqBase,
      boolean tiedOutput,
      int headSize) {
    this(
        name,
        blockCount,
        embeddingLength,
        headCount,
        headCountKv,
        feedForwardLength,
        contextLength,
        ropeFreqBase,
        tiedOutput,
        headSize,
        "llama",
        0);
  }

  /** A shape whose heads are the width over the head count (which must divide it). */
  public LlamaShape(
      String name,
      int blockCount,
      int embeddingLength,
      int headCount,
      int headCountKv,
      int feedForwardLength,
      int contextLength,
      float ropeFreqBase,
      boolean tiedOutput) {
    this(
        name,
        blockCount,
        embeddingLength,
        headCount,
        headCountKv,
        feedForwardLength,
        contextLength,
        ropeFreqBase,
        tiedOutput,
        headCount > 0 && embeddingLength % headCount == 0 ? embeddingLength / headCount : 0);
  }

  /**
   * SmolLM-135M (HuggingFaceTB/SmolLM-135M's config.json): 30 layers, width 576, 9 heads of 64,
   * 3 KV heads, SwiGLU 1536, RoPE base 10000, tied output; context 2048.
   */
  public static final LlamaShape SMOLLM_135M =
      new LlamaShape("smollm-135m", 30, 576, 9, 3, 1536, 2048, 10_000f, true);

  /**
   * Llama 3.2 1B (meta-llama/Llama-3.2-1B's config.json): 16 layers, width 2048, 32 heads of 64,
   * 8 KV heads, SwiGLU 8192, RoPE base 500000, tied output; context cut to 2048. Its "llama3"
   * RoPE frequency scaling is left out: the shape, not the numerics, is what a benchmark needs.
   */
  public static final LlamaShape LLAMA_1B =
      new LlamaShape("llama-1b", 16, 2048, 32, 8, 8192, 2048, 500_000f, true);

  /**
   * Qwen2.5-0.5B's sizes (Qwen/Qwen2.5-0.5B's config.json): 24 layers, width 896, 14 heads of 64,
   * 2 KV heads, SwiGLU 4864, RoPE base 1000000, tied output, context 32768. Written as a
   * llama-architecture file, without qwen2's Q/K/V biases (under 0.1% of its multiply-adds): the
   * smallest real shape whose KV heads split over 2 tensor-parallel ranks, for comparing tp and cp
   * on 2 ranks (docs/PERFORMANCE.md, "Context parallelism").
   */
  public static final LlamaShape QWEN25_05B =
      new LlamaShape("qwen2.5-0.5b", 24, 896, 14, 2, 4864, 32_768, 1_000_000f, true);

  /**
   * A shape for tests: 2 layers, width 64, 4 heads of 16, 2 KV heads, SwiGLU 96 (whole 32-weight
   * blocks everywhere, so every writable type applies), separate output, context 64.
   */
  public static final LlamaShape TEST_TINY =
      new LlamaShape("test-tiny", 2, 64, 4, 2, 96, 64, 10_000f, false);

  /**
   * Gemma 3 1B (google/gemma-3-1b-pt's config.json): 26 layers, width 1152, 4 heads of 256, 1 KV
   * head, GELU feed-forward 6912, tied output, context 32768; five layers in six slide over 512
   * positions with RoPE base 10,000, the others attend over all with base 1,000,000.
   */
  public static final LlamaShape GEMMA3_1B =
      new LlamaShape(
          "gemma3-1b", 26, 1152, 4, 1, 6912, 32_768, 1_000_000f, true, 256, "gemma3", 512);

  /** The named shapes, in the order {@link #of} lists them. */
  public static final List<LlamaShape> KNOWN =
      List.of(SMOLLM_135M, LLAMA_1B, QWEN25_05B, GEMMA3_1B, TEST_TINY);

  /** RMSNorm's epsilon in every named llama shape (the value both reference configs use). */
  public static final float RMS_NORM_EPSILON = 1e-5f;

  /** RMSNorm's epsilon of a {@code gemma3} shape (Gemma 3's config). */
  public static final float GEMMA_RMS_NORM_EPSILON = 1e-6f;

  /** Validates the sizes. */
  public LlamaShape {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(architecture, "architecture");
    if (architecture.equals("gemma3")
        ? slidingWindow < 1 || !tiedOutput
        : !architecture.equals("llama") || slidingWindow != 0) {
      throw new IllegalArgumentException(
          "shape "
              + name
              + ": architecture "
              + architecture
              + " with sliding window "
              + slidingWindow
              + (tiedOutput ? "" : " and a separate output")
              + ": a llama shape has no window, a gemma3 shape a window of at least 1 and a tied"
              + " output");
    }
    if (blockCount <= 0
        || embeddingLength <= 0
        || headCount <= 0
        || headCountKv <= 0
        || feedForwardLength <= 0
        || contextLength <= 0) {
      throw new IllegalArgumentException(
          "shape "
              + name
              + ": sizes must be positive: blocks="
              + blockCount
              + " embedding="
              + embeddingLength
              + " heads="
              + headCount
              + "/"
              + headCountKv
              + " feedForward="
              + feedForwardLength
              + " context="
              + contextLength);
    }
    if (headSize <= 0 || headCount % headCountKv != 0) {
      throw new IllegalArgumentException(
          "shape "
              + name
              + ": embedding "
              + embeddingLength
              + " must divide into "
              + headCount
              + " heads (or the head size be given: "
              + headSize
              + "), and those into "
              + headCountKv
              + " KV heads");
    }
  }

  /**
   * The named shape.
   *
   * @throws IllegalArgumentException naming the known shapes if {@code name} is not one
   */
  public static LlamaShape of(String name) {
    Objects.requireNonNull(name, "name");
    for (LlamaShape shape : KNOWN) {
      if (shape.name.equals(name)) {
        return shape;
      }
    }
    throw new IllegalArgumentException(
        "unknown shape '" + name + "'; known: " + String.join(", ", names()));
  }

  /** The names of {@link #KNOWN}. */
  public static List<String> names() {
    return KNOWN.stream().map(LlamaShape::name).toList();
  }

  /** Whether the heads are of another size than the width over the head count. */
  public boolean headSizeIsOwn() {
    return headSize * headCount != embeddingLength;
  }

  /** Floats per query row: heads times head size (the width, unless {@link #headSizeIsOwn}). */
  public int qDim() {
    return headCount * headSize;
  }

  /** Floats per key (or value) row: KV heads times head size. */
  public int kvDim() {
    return headCountKv * headSize;
  }

  /** Whether this is a {@code gemma3} shape. */
  public boolean gemma() {
    return architecture.equals("gemma3");
  }

  /** Weights in the file for a vocabulary of {@code vocabularySize} tokens. */
  public long parameterCount(int vocabularySize) {
    long d = embeddingLength;
    long norms = gemma() ? 4 * d + 2L * headSize : 2 * d;
    long perLayer = norms + 2 * d * qDim() + 2 * d * kvDim() + 3 * d * (long) feedForwardLength;
    long embedding = d * vocabularySize;
    return embedding + (tiedOutput ? 0 : embedding) + d + blockCount * perLayer;
  }
}
