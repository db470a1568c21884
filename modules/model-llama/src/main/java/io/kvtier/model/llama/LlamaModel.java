package io.kvtier.model.llama;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensor;
import io.kvtier.gguf.GgufUnsupportedException;
import io.kvtier.gguf.ModelHyperparameters;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.IntStream;

/**
 * A {@code llama} or {@code qwen2} transformer over a GGUF file's mapped weights: RMSNorm, RoPE
 * (adjacent pairs for llama, NeoX halves for qwen2) with the file's base and linear scaling,
 * grouped-query attention, SwiGLU, tied or separate output, and qwen2's QKV biases.
 *
 * <p>Design note: {@link #forward} runs a batch of consecutive positions. Matrix products are
 * per (row, position) dots ({@link LlamaWeight}); a position's K/V goes to the {@link KvStore}
 * before any position attends, and attention reads positions {@code 0..p} back from the store in
 * position order. So each position's logits are the same bits whether it was computed alone, in
 * a prefill batch of any size, or after its prefix came from a cache. The model holds no
 * per-sequence state; the store does.
 */
public final class LlamaModel {
  /** Below this many multiply-adds attention runs on the calling thread. */
  private static final long PARALLEL_ATTENTION_THRESHOLD = 1L << 16;

  private final ModelHyperparameters shape;
  private final boolean neox;
  private final GgufTensor tokenEmbedding;
  private final Layer[] layers;
  private final float[] outputNorm;
  private final LlamaWeight output;

  private record Layer(
      float[] attentionNorm,
      LlamaWeight wq,
      LlamaWeight wk,
      LlamaWeight wv,
      Optional<float[]> bq,
      Optional<float[]> bk,
      Optional<float[]> bv,
      LlamaWeight wo,
      float[] ffnNorm,
      LlamaWeight gate,
      LlamaWeight up,
      LlamaWeight down) {}

  private LlamaModel(GgufFile file, ModelHyperparameters shape) {
    this.shape = shape;
    this.neox = shape.architecture().equals("qwen2");
    String scaling = shape.ropeScaling().type();
    if (!scaling.equals("none") && !scaling.equals("linear")) {
      throw new GgufUnsupportedException(
          file.path()
              + ": RoPE scaling '"
              + scaling
              + "' is not supported; supported: none, linear");
    }
    this.tokenEmbedding = file.tensor("token_embd.weight");
    this.layers = new Layer[shape.blockCount()];
    for (int l = 0; l < layers.length; l++) {
      String p = "blk." + l + ".";
      layers[l] =
          new Layer(
              vector(file, p + "attn_norm.weight"),
              weight(file, p + "attn_q.weight"),
              weight(file, p + "attn_k.weight"),
              weight(file, p + "attn_v.weight"),
              optionalVector(file, p + "attn_q.bias"),
              optionalVector(file, p + "attn_k.bias"),
              optionalVector(file, p + "attn_v.bias"),
              weight(file, p + "attn_output.weight"),
              vector(file, p + "ffn_norm.weight"),
              weight(file, p + "ffn_gate.weight"),
              weight(file, p + "ffn_up.weight"),
              weight(file, p + "ffn_down.weight"));
    }
    this.outputNorm = vector(file, "output_norm.weight");
    this.output =
        file.hasTensor("output.weight")
            ? weight(file, "output.weight")
            : new LlamaWeight(tokenEmbedding);
  }

  /**
   * The model in {@code file}, whose weights stay mapped: close the file only after the model's
   * last use.
   */
  public static LlamaModel of(GgufFile file) {
    Objects.requireNonNull(file, "file");
    return new LlamaModel(file, ModelHyperparameters.of(file));
  }

  private static LlamaWeight weight(GgufFile file, String name) {
    return new LlamaWeight(file.tensor(name));
  }

  // Norm weights and biases are a few KB per layer: read once onto the heap.
  private static float[] vector(GgufFile file, String name) {
    return file.tensor(name).dequantizeRow(0);
  }

  private static Optional<float[]> optionalVector(GgufFile file, String name) {
    return file.hasTensor(name) ? Optional.of(vector(file, name)) : Optional.empty();
  }

  /** The file's shape. */
  public ModelHyperparameters hyperparameters() {
    return shape;
  }

  /** Floats per K (or V) row of one position in one layer. */
  public int kvDim() {
    return shape.headCountKv() * shape.headSize();
  }

  /** Positions the model was trained for. */
  public int contextLength() {
    return shape.contextLength();
  }

  /** Logits per position: the output matrix's rows. */
  public int vocabularySize() {
    return output.rows();
  }

  /** Decodes one token at {@code position}: its logits. */
  public float[] decode(int token, int position, KvStore kv) {
    return forward(new int[] {token}, position, kv, false)[0];
  }

  /**
   * Runs {@code tokens} at positions {@code start..start+n-1}, writing their K/V to {@code kv},
   * which must already hold positions {@code 0..start-1}.
   *
   * @param allLogits the logits of every position; otherwise of the last only
   * @return logits, one row per position returned
   */
  public float[][] forward(int[] tokens, int start, KvStore kv, boolean allLogits) {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(kv, "kv");
    int n = tokens.length;
    if (n == 0) {
      throw new IllegalArgumentException("no tokens to run");
    }
    if (start < 0 || start + n > kv.capacity()) {
      throw new IndexOutOfBoundsException(
          "index=" + start + " length=" + n + " capacity=" + kv.capacity());
    }
    if (kv.layers() != layers.length || kv.kvDim() != kvDim()) {
      throw new IllegalArgumentException(
          "KV store has layers="
              + kv.layers()
              + " kvDim="
              + kv.kvDim()
              + " but the model needs layers="
              + layers.length
              + " kvDim="
              + kvDim());
    }
    int dim = shape.embeddingLength();
    int kvDim = kvDim();
    int ff = shape.feedForwardLength();
    int vocabulary = vocabularySize();
    float[] x = new float[n * dim];
    for (int p = 0; p < n; p++) {
      int token = tokens[p];
      if (token < 0 || token >= tokenEmbedding.info().rowCount()) {
        throw new IllegalArgumentException(
            "token=" + token + " outside the vocabulary of " + tokenEmbedding.info().rowCount());
      }
      tokenEmbedding.type().dequantize(tokenEmbedding.data(), (long) token * dim, dim, x, p * dim);
    }
    float[] xb = new float[n * dim];
    float[] q = new float[n * dim];
    float[] k = new float[n * kvDim];
    float[] v = new float[n * kvDim];
    float[] attended = new float[n * dim];
    float[] residual = new float[n * dim];
    float[] gate = new float[n * ff];
    float[] up = new float[n * ff];
    int total = start + n;
    float[] keys = new float[total * kvDim];
    float[] values = new float[total * kvDim];
    for (int l = 0; l < layers.length; l++) {
      Layer layer = layers[l];
      for (int p = 0; p < n; p++) {
        Kernels.rmsNorm(x, p * dim, layer.attentionNorm, shape.rmsNormEpsilon(), xb, p * dim, dim);
      }
      layer.wq.multiply(xb, n, q);
      layer.wk.multiply(xb, n, k);
      layer.wv.multiply(xb, n, v);
      addBias(layer.bq, q, n);
      addBias(layer.bk, k, n);
      addBias(layer.bv, v, n);
      for (int p = 0; p < n; p++) {
        rotate(q, p * dim, shape.headCount(), start + p);
        rotate(k, p * kvDim, shape.headCountKv(), start + p);
        kv.write(l, start + p, k, v, p * kvDim);
      }
      kv.read(l, total, keys, values);
      attend(q, keys, values, attended, n, start);
      layer.wo.multiply(attended, n, residual);
      add(x, residual, n * dim);
      for (int p = 0; p < n; p++) {
        Kernels.rmsNorm(x, p * dim, layer.ffnNorm, shape.rmsNormEpsilon(), xb, p * dim, dim);
      }
      layer.gate.multiply(xb, n, gate);
      layer.up.multiply(xb, n, up);
      Kernels.swiglu(gate, 0, up, 0, n * ff);
      layer.down.multiply(gate, n, residual);
      add(x, residual, n * dim);
    }
    int first = allLogits ? 0 : n - 1;
    int rows = n - first;
    float[] normed = new float[rows * dim];
    for (int p = first; p < n; p++) {
      Kernels.rmsNorm(
          x, p * dim, outputNorm, shape.rmsNormEpsilon(), normed, (p - first) * dim, dim);
    }
    float[] flat = new float[rows * vocabulary];
    output.multiply(normed, rows, flat);
    float[][] logits = new float[rows][];
    for (int r = 0; r < rows; r++) {
      logits[r] = java.util.Arrays.copyOfRange(flat, r * vocabulary, (r + 1) * vocabulary);
    }
    return logits;
  }

  private void rotate(float[] v, int offset, int heads, int position) {
    int headSize = shape.headSize();
    float pos = position / shape.ropeScaling().factor();
    for (int h = 0; h < heads; h++) {
      Kernels.rope(
          v, offset + h * headSize, shape.ropeDimensionCount(), pos, shape.ropeFreqBase(), neox);
    }
  }

  /**
   * Causal grouped-query attention of each batch position over positions 0..p, in order. The
   * (position, head) pairs are independent and each is computed the same way on any thread, so
   * running them in parallel changes no bit.
   */
  private void attend(float[] q, float[] keys, float[] values, float[] out, int n, int start) {
    int heads = shape.headCount();
    long work = (long) n * heads * (start + n) * shape.headSize();
    IntStream pairs = IntStream.range(0, n * heads);
    if (work >= PARALLEL_ATTENTION_THRESHOLD) {
      pairs = pairs.parallel();
    }
    pairs.forEach(pair -> attendHead(q, keys, values, out, pair / heads, pair % heads, start));
  }

  private void attendHead(
      float[] q, float[] keys, float[] values, float[] out, int p, int h, int start) {
    int kvDim = kvDim();
    int headSize = shape.headSize();
    int group = shape.headCount() / shape.headCountKv();
    float scale = (float) (1.0 / Math.sqrt(headSize));
    int count = start + p + 1;
    float[] scores = new float[count];
    int qAt = p * shape.embeddingLength() + h * headSize;
    int kvAt = (h / group) * headSize;
    for (int t = 0; t < count; t++) {
      scores[t] = Kernels.dot(q, qAt, keys, t * kvDim + kvAt, headSize) * scale;
    }
    Kernels.softmax(scores, 0, count);
    for (int i = 0; i < headSize; i++) {
      float sum = 0f;
      for (int t = 0; t < count; t++) {
        sum += scores[t] * values[t * kvDim + kvAt + i];
      }
      out[qAt + i] = sum;
    }
  }

  private static void addBias(Optional<float[]> bias, float[] v, int n) {
    if (bias.isEmpty()) {
      return;
    }
    float[] b = bias.get();
    for (int p = 0; p < n; p++) {
      for (int i = 0; i < b.length; i++) {
        v[p * b.length + i] += b[i];
      }
    }
  }

  private static void add(float[] x, float[] delta, int n) {
    for (int i = 0; i < n; i++) {
      x[i] += delta[i];
    }
  }

  @Override
  public String toString() {
    return shape.architecture()
        + " "
        + shape.name()
        + ": "
        + layers.length
        + " layers, dim "
        + shape.embeddingLength()
        + ", heads "
        + shape.headCount()
        + "/"
        + shape.headCountKv()
        + ", vocabulary "
        + vocabularySize();
  }
}
