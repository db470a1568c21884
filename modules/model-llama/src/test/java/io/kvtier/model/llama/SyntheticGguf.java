package io.kvtier.model.llama;

import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Random;

/**
 * Small seeded random {@code llama}, {@code qwen2}, {@code gemma2} or {@code gemma3} files for the
 * serving tests, so that they run without ../shared: 8 query and 4 KV heads of 8 (so 1, 2 and 4
 * ranks split them), a feed-forward of 96, weights in F32 or a quantized type.
 *
 * @param arch {@code llama} (separate output), {@code qwen2} (QKV biases, tied output), {@code
 *     gemma2} (norms after attention and the feed-forward, tied output) or {@code gemma3} (gemma2's
 *     tensors and a norm of each query and key head)
 * @param layers transformer layers
 * @param kvHeads KV heads (the query heads are twice as many)
 * @param feedForward the feed-forward's inner size
 * @param vocabulary tokens
 * @param context the context length
 * @param type the matrices' type (norms and biases stay F32)
 * @param head floats per attention head: {@link #HEAD}, or another size written as {@code
 *     attention.key_length} (query rows then are not the width)
 * @param window a Gemma file's {@code attention.sliding_window}; written where above 0
 */
record SyntheticGguf(
    String arch,
    int layers,
    int kvHeads,
    int feedForward,
    int vocabulary,
    int context,
    GgufTensorType type,
    int head,
    int window) {

  /** Floats per head. */
  static final int HEAD = 8;

  /** The default shape: 2 layers, 4 KV heads, feed-forward 96, 64 tokens, context 512, F32. */
  static SyntheticGguf llama() {
    return new SyntheticGguf("llama", 2, 4, 96, 64, 512, GgufTensorType.F32, HEAD, 0);
  }

  /**
   * A {@code gemma3} file of 6 layers (five sliding over {@code window} positions, the sixth
   * attending over all; RoPE base 1,000,000 and linear scaling 8 where it is global, as Gemma 3
   * 4B's), or a {@code gemma2} one (even layers sliding).
   */
  static SyntheticGguf gemma(String arch, int window) {
    return new SyntheticGguf(arch, 6, 4, 96, 64, 512, GgufTensorType.F32, HEAD, window);
  }

  SyntheticGguf withArch(String a) {
    return new SyntheticGguf(
        a, layers, kvHeads, feedForward, vocabulary, context, type, head, window);
  }

  SyntheticGguf withKvHeads(int k) {
    return new SyntheticGguf(arch, layers, k, feedForward, vocabulary, context, type, head, window);
  }

  SyntheticGguf withType(GgufTensorType t) {
    return new SyntheticGguf(
        arch, layers, kvHeads, feedForward, vocabulary, context, t, head, window);
  }

  SyntheticGguf withHeadSize(int h) {
    return new SyntheticGguf(
        arch, layers, kvHeads, feedForward, vocabulary, context, type, h, window);
  }

  SyntheticGguf withContext(int c) {
    return new SyntheticGguf(arch, layers, kvHeads, feedForward, vocabulary, c, type, head, window);
  }

  SyntheticGguf withLayers(int n) {
    return new SyntheticGguf(
        arch, n, kvHeads, feedForward, vocabulary, context, type, head, window);
  }

  int heads() {
    return 2 * kvHeads;
  }

  int dim() {
    return heads() * HEAD;
  }

  /** Writes the file, weights drawn from {@code seed}. */
  Path write(Path path, long seed) throws IOException {
    return write(path, seed, null);
  }

  /**
   * Writes the file with the {@code tokenizer.*} metadata of {@code tokenizer} (unless null),
   * which must hold {@link #vocabulary} tokens, so that llama.cpp can load it.
   */
  Path write(Path path, long seed, io.kvtier.gguf.GgufFile tokenizer) throws IOException {
    Random random = new Random(seed);
    int dim = dim();
    int qDim = heads() * head;
    int kvDim = kvHeads * head;
    boolean qwen = arch.equals("qwen2");
    boolean gemma = arch.startsWith("gemma");
    GgufWriter writer = new GgufWriter(3);
    if (tokenizer != null) {
      tokenizer
          .metadata()
          .forEach(
              (key, value) -> {
                if (key.startsWith("tokenizer.")) {
                  writer.put(key, value);
                }
              });
    }
    writer.put("general.architecture", GgufValue.ofString(arch));
    writer.put("general.name", GgufValue.ofString("synthetic-" + arch));
    writer.put(arch + ".context_length", GgufValue.ofUint32(context));
    writer.put(arch + ".embedding_length", GgufValue.ofUint32(dim));
    writer.put(arch + ".block_count", GgufValue.ofUint32(layers));
    writer.put(arch + ".feed_forward_length", GgufValue.ofUint32(feedForward));
    writer.put(arch + ".attention.head_count", GgufValue.ofUint32(heads()));
    writer.put(arch + ".attention.head_count_kv", GgufValue.ofUint32(kvHeads));
    writer.put(arch + ".attention.layer_norm_rms_epsilon", GgufValue.ofFloat32(1e-5f));
    if (arch.equals("gemma3")) {
      // Gemma 3 4B's: its global layers' RoPE base and linear scaling, which its sliding layers
      // replace with base 10,000 and no scaling
      writer.put(arch + ".rope.freq_base", GgufValue.ofFloat32(1_000_000f));
      writer.put(arch + ".rope.scaling.type", GgufValue.ofString("linear"));
      writer.put(arch + ".rope.scaling.factor", GgufValue.ofFloat32(8f));
    } else {
      writer.put(arch + ".rope.freq_base", GgufValue.ofFloat32(10_000f));
    }
    if (head != HEAD) {
      writer.put(arch + ".attention.key_length", GgufValue.ofUint32(head));
      writer.put(arch + ".attention.value_length", GgufValue.ofUint32(head));
    }
    if (window > 0) {
      writer.put(arch + ".attention.sliding_window", GgufValue.ofUint32(window));
    }
    matrix(writer, random, "token_embd.weight", vocabulary, dim, GgufTensorType.F32);
    for (int l = 0; l < layers; l++) {
      String p = "blk." + l + ".";
      norm(writer, random, p + "attn_norm.weight", dim);
      matrix(writer, random, p + "attn_q.weight", qDim, dim, type);
      matrix(writer, random, p + "attn_k.weight", kvDim, dim, type);
      matrix(writer, random, p + "attn_v.weight", kvDim, dim, type);
      if (qwen) {
        vector(writer, random, p + "attn_q.bias", qDim);
        vector(writer, random, p + "attn_k.bias", kvDim);
        vector(writer, random, p + "attn_v.bias", kvDim);
      }
      if (arch.equals("gemma3")) {
        norm(writer, random, p + "attn_q_norm.weight", head);
        norm(writer, random, p + "attn_k_norm.weight", head);
      }
      matrix(writer, random, p + "attn_output.weight", dim, qDim, type);
      if (gemma) {
        norm(writer, random, p + "post_attention_norm.weight", dim);
      }
      norm(writer, random, p + "ffn_norm.weight", dim);
      matrix(writer, random, p + "ffn_gate.weight", feedForward, dim, type);
      matrix(writer, random, p + "ffn_up.weight", feedForward, dim, type);
      matrix(writer, random, p + "ffn_down.weight", dim, feedForward, type);
      if (gemma) {
        norm(writer, random, p + "post_ffw_norm.weight", dim);
      }
    }
    norm(writer, random, "output_norm.weight", dim);
    if (!qwen && !gemma) {
      matrix(writer, random, "output.weight", vocabulary, dim, type);
    }
    writer.write(path);
    return path;
  }

  private static void matrix(
      GgufWriter writer, Random random, String name, int rows, int cols, GgufTensorType type) {
    float[][] m = new float[rows][cols];
    for (float[] row : m) {
      for (int i = 0; i < cols; i++) {
        row[i] = (float) (random.nextGaussian() * 0.3);
      }
    }
    writer.addTensor(
        name,
        type,
        new long[] {cols, rows},
        (row, values) -> System.arraycopy(m[(int) row], 0, values, 0, values.length));
  }

  private static void norm(GgufWriter writer, Random random, String name, int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) (1 + random.nextGaussian() * 0.1);
    }
    writer.addTensor(
        name,
        GgufTensorType.F32,
        new long[] {n},
        (row, values) -> System.arraycopy(v, 0, values, 0, n));
  }

  private static void vector(GgufWriter writer, Random random, String name, int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) (random.nextGaussian() * 0.2);
    }
    writer.addTensor(
        name,
        GgufTensorType.F32,
        new long[] {n},
        (row, values) -> System.arraycopy(v, 0, values, 0, n));
  }
}
