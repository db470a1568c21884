package io.kvtier.gguf;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Writes a {@code llama} (or {@code gemma3}) GGUF file (version 3, which llama.cpp reads too) of
 * seeded random weights at a {@link LlamaShape}, with a real vocabulary: the {@code tokenizer.*} metadata of a
 * vocabulary file (tokens, scores, types, merges, pre-tokenizer, BOS/EOS) copied unchanged. Such
 * a file costs what the real model costs to run, so benchmarks and the cache see real sizes, but
 * its text is noise: {@code general.name} ends in "(random weights)" and
 * {@code kvtier.random_weights} is true.
 *
 * <p>Weights are made row by row while the file is written ({@link GgufWriter.RowSource}), so a
 * 1B-parameter file needs one row of heap. Each row's values come from a generator seeded by the
 * seed, the tensor's position in the file and the row, so the same arguments write the same
 * bytes. Values are uniform with standard deviation {@code 1/sqrt(columns)} for matrices (which
 * keeps activations near unit size through the layers) and 1 for the token embedding; norm weights
 * are 1 and stay F32, as llama.cpp's converter leaves 1-D tensors. A 256-weight type's matrices
 * whose rows are not whole super-blocks take llama-quantize's fallback type ({@link #typeFor}).
 */
public final class RandomLlamaWriter {
  /** Tensor types the weights may be written as. */
  public static final Set<GgufTensorType> TYPES =
      Set.of(
          GgufTensorType.F32,
          GgufTensorType.F16,
          GgufTensorType.BF16,
          GgufTensorType.Q8_0,
          GgufTensorType.Q4_0,
          GgufTensorType.Q4_1,
          GgufTensorType.Q5_0,
          GgufTensorType.Q5_1,
          GgufTensorType.Q2_K,
          GgufTensorType.Q3_K,
          GgufTensorType.Q4_K,
          GgufTensorType.Q5_K,
          GgufTensorType.Q6_K,
          GgufTensorType.IQ4_NL,
          GgufTensorType.IQ4_XS);

  /** The metadata key marking a file's weights as random. */
  public static final String RANDOM_WEIGHTS_KEY = "kvtier.random_weights";

  private static final double SQRT3 = Math.sqrt(3);

  private RandomLlamaWriter() {}

  /**
   * Writes {@code shape} with {@code vocabulary}'s tokenizer, weights of {@code type} drawn from
   * {@code seed}, to {@code out} (replaced if present).
   *
   * @throws IllegalArgumentException if {@code vocabulary} has no {@code tokenizer.ggml.tokens},
   *     {@code type} is not in {@link #TYPES}, or a row length is not whole blocks of it (a
   *     256-weight type's rows fall back instead: {@link #typeFor})
   */
  public static void write(
      LlamaShape shape, GgufFile vocabulary, GgufTensorType type, long seed, Path out)
      throws IOException {
    Objects.requireNonNull(shape, "shape");
    Objects.requireNonNull(vocabulary, "vocabulary");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(out, "out");
    if (!TYPES.contains(type)) {
      throw new IllegalArgumentException(
          "weights cannot be written as " + type + "; supported: " + TYPES);
    }
    if (!vocabulary.has("tokenizer.ggml.tokens")) {
      throw new IllegalArgumentException(
          vocabulary.path() + " has no tokenizer.ggml.tokens: not a vocabulary file");
    }
    for (int columns :
        new int[] {shape.embeddingLength(), shape.feedForwardLength(), shape.qDim()}) {
      GgufTensorType written = typeFor(type, columns);
      if (columns % written.blockSize() != 0) {
        throw new IllegalArgumentException(
            "shape "
                + shape.name()
                + ": row length "
                + columns
                + " is not a multiple of the "
                + written
                + " block size "
                + written.blockSize());
      }
    }
    int vocabularySize = vocabulary.getArray("tokenizer.ggml.tokens").size();
    GgufWriter writer = new GgufWriter(3);
    metadata(writer, shape, vocabulary, vocabularySize, seed);
    Tensors tensors = new Tensors(writer, seed, type);
    int d = shape.embeddingLength();
    tensors.matrix("token_embd.weight", vocabularySize, d, 1.0);
    for (int l = 0; l < shape.blockCount(); l++) {
      String p = "blk." + l + ".";
      tensors.norm(p + "attn_norm.weight", d);
      tensors.matrix(p + "attn_q.weight", shape.qDim(), d);
      tensors.matrix(p + "attn_k.weight", shape.kvDim(), d);
      tensors.matrix(p + "attn_v.weight", shape.kvDim(), d);
      if (shape.gemma()) {
        tensors.norm(p + "attn_q_norm.weight", shape.headSize());
        tensors.norm(p + "attn_k_norm.weight", shape.headSize());
      }
      tensors.matrix(p + "attn_output.weight", d, shape.qDim());
      if (shape.gemma()) {
        tensors.norm(p + "post_attention_norm.weight", d);
      }
      tensors.norm(p + "ffn_norm.weight", d);
      tensors.matrix(p + "ffn_gate.weight", shape.feedForwardLength(), d);
      tensors.matrix(p + "ffn_up.weight", shape.feedForwardLength(), d);
      tensors.matrix(p + "ffn_down.weight", d, shape.feedForwardLength());
      if (shape.gemma()) {
        tensors.norm(p + "post_ffw_norm.weight", d);
      }
    }
    tensors.norm("output_norm.weight", d);
    if (!shape.tiedOutput()) {
      tensors.matrix("output.weight", vocabularySize, d);
    }
    writer.write(out);
  }

  /**
   * The type a matrix with rows of {@code columns} weights is written as when {@code type} is
   * asked for: {@code type} itself, except that a type whose 256-weight super-blocks do not
   * divide the rows falls back as {@code llama-quantize} does (its {@code
   * llama_tensor_get_type}): Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K, Q3_K and IQ4_XS to
   * IQ4_NL, and to F16 where the fallback's blocks of 32 do not divide them either. So {@code
   * Q4_K} at smollm-135m's width of 576 writes Q5_0 where a row is 576 weights and Q4_K where it is
   * 1,536, as a downloaded {@code Q4_K_M} file of such a model holds them (beside its Q6_K
   * tensors).
   */
  public static GgufTensorType typeFor(GgufTensorType type, int columns) {
    if (type.blockSize() != 256 || columns % 256 == 0) {
      return type;
    }
    GgufTensorType fallback =
        switch (type) {
          case Q4_K -> GgufTensorType.Q5_0;
          case Q5_K -> GgufTensorType.Q5_1;
          case Q6_K -> GgufTensorType.Q8_0;
          default -> GgufTensorType.IQ4_NL; // Q2_K, Q3_K, IQ4_XS
        };
    return columns % fallback.blockSize() == 0 ? fallback : GgufTensorType.F16;
  }

  private static void metadata(
      GgufWriter w, LlamaShape shape, GgufFile vocabulary, int vocabularySize, long seed) {
    String arch = shape.architecture();
    w.put("general.architecture", GgufValue.ofString(arch));
    w.put("general.name", GgufValue.ofString(shape.name() + " (random weights)"));
    w.put(RANDOM_WEIGHTS_KEY, GgufValue.ofBool(true));
    w.put("kvtier.random_seed", GgufValue.ofUint64(seed));
    w.put("kvtier.shape", GgufValue.ofString(shape.name()));
    String p = arch + ".";
    w.put(p + "context_length", GgufValue.ofUint32(shape.contextLength()));
    w.put(p + "embedding_length", GgufValue.ofUint32(shape.embeddingLength()));
    w.put(p + "block_count", GgufValue.ofUint32(shape.blockCount()));
    w.put(p + "feed_forward_length", GgufValue.ofUint32(shape.feedForwardLength()));
    w.put(p + "attention.head_count", GgufValue.ofUint32(shape.headCount()));
    w.put(p + "attention.head_count_kv", GgufValue.ofUint32(shape.headCountKv()));
    w.put(
        p + "attention.layer_norm_rms_epsilon",
        GgufValue.ofFloat32(
            shape.gemma() ? LlamaShape.GEMMA_RMS_NORM_EPSILON : LlamaShape.RMS_NORM_EPSILON));
    if (shape.gemma()) {
      w.put(p + "attention.sliding_window", GgufValue.ofUint32(shape.slidingWindow()));
    }
    w.put(p + "rope.freq_base", GgufValue.ofFloat32(shape.ropeFreqBase()));
    if (shape.headSizeIsOwn()) {
      // As llama.cpp's converter writes heads of another size than the width over their count
      w.put(p + "attention.key_length", GgufValue.ofUint32(shape.headSize()));
      w.put(p + "attention.value_length", GgufValue.ofUint32(shape.headSize()));
    }
    w.put(p + "rope.dimension_count", GgufValue.ofUint32(shape.headSize()));
    w.put(p + "vocab_size", GgufValue.ofUint32(vocabularySize));
    vocabulary
        .metadata()
        .forEach(
            (key, value) -> {
              if (key.startsWith("tokenizer.")) {
                w.put(key, value);
              }
            });
  }

  /** Adds tensors in file order, each with its own seeded rows. */
  private static final class Tensors {
    private final GgufWriter writer;
    private final long seed;
    private final GgufTensorType type;
    private int index;

    Tensors(GgufWriter writer, long seed, GgufTensorType type) {
      this.writer = writer;
      this.seed = seed;
      this.type = type;
    }

    void matrix(String name, int rows, int columns) {
      matrix(name, rows, columns, 1.0 / Math.sqrt(columns));
    }

    void matrix(String name, int rows, int columns, double deviation) {
      long tensorSeed = seed * 0x9E37_79B9_7F4A_7C15L + index++;
      double half = deviation * SQRT3;
      writer.addTensor(
          name,
          typeFor(type, columns),
          new long[] {columns, rows},
          (row, values) -> {
            SplittableRandom random =
                new SplittableRandom(tensorSeed * 0xBF58_476D_1CE4_E5B9L + row);
            for (int i = 0; i < values.length; i++) {
              values[i] = (float) ((random.nextDouble() * 2 - 1) * half);
            }
          });
    }

    void norm(String name, int length) {
      index++;
      writer.addTensor(
          name,
          GgufTensorType.F32,
          new long[] {length},
          (row, values) -> java.util.Arrays.fill(values, 1f));
    }
  }
}
