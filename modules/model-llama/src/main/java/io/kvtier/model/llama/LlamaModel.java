package io.kvtier.model.llama;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensor;
import io.kvtier.gguf.GgufTensorInfo;
import io.kvtier.gguf.GgufUnsupportedException;
import io.kvtier.gguf.ModelHyperparameters;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A {@code llama}, {@code qwen2}, {@code gemma2} or {@code gemma3} transformer over a GGUF file's
 * mapped weights: RMSNorm, RoPE (adjacent pairs for llama, NeoX halves for the others) with the
 * file's base and linear scaling, grouped-query attention, SwiGLU (GELU for Gemma), tied or
 * separate output, qwen2's QKV biases, and what {@link Family} says Gemma adds (sliding windows,
 * soft caps, norms after attention and the feed-forward, gemma3's per-head query and key norms).
 *
 * <p>Design note: {@link #forward} runs a batch of consecutive positions, layer by layer, through
 * a {@link ShardPass} (the same code the serving runner steps layer by layer for the engine). Matrix products are
 * per (row, position) dots ({@link LlamaWeight}); a position's K/V goes to the {@link KvStore}
 * before any position attends, and attention reads positions {@code 0..p} back from the store in
 * position order. So each position's logits are the same bits whether it was computed alone, in
 * a prefill batch of any size, or after its prefix came from a cache. The model holds no
 * per-sequence state; the store does.
 */
public final class LlamaModel {
  private final ModelHyperparameters shape;
  private final Family family;

  /**
   * Each rotated pair's angle divisor, from the file's {@code rope_freqs.weight} (Llama 3.1 and
   * later: their "llama3" frequency scaling, which the converter writes as this tensor and not as
   * metadata); null where the file has none.
   */
  private final float[] ropeFactors;

  private final GgufTensor tokenEmbedding;
  private final Layer[] layers;
  private final float[] outputNorm;
  private final LlamaWeight output;

  /** The pass over every head and feed-forward row: {@link #forward}'s. */
  private final ShardPass whole;

  /** One transformer block's weights; norms and biases on the heap, matrices mapped. */
  record Layer(
      float[] attentionNorm,
      LlamaWeight wq,
      LlamaWeight wk,
      LlamaWeight wv,
      Optional<float[]> bq,
      Optional<float[]> bk,
      Optional<float[]> bv,
      Optional<float[]> qNorm,
      Optional<float[]> kNorm,
      LlamaWeight wo,
      Optional<float[]> postAttentionNorm,
      float[] ffnNorm,
      LlamaWeight gate,
      LlamaWeight up,
      LlamaWeight down,
      Optional<float[]> postFfnNorm) {}

  private LlamaModel(GgufFile file, ModelHyperparameters shape) {
    this.shape = shape;
    String scaling = shape.ropeScaling().type();
    if (!scaling.equals("none") && !scaling.equals("linear")) {
      throw new GgufUnsupportedException(
          file.path()
              + ": RoPE scaling '"
              + scaling
              + "' is not supported; supported: none, linear");
    }
    this.family = Family.of(file, shape);
    Reads reads = new Reads(file);
    this.ropeFactors = ropeFactors(reads, shape);
    long dim = shape.embeddingLength();
    GgufTensor embedding = reads.tensor("token_embd.weight");
    long vocabulary =
        shape.vocabularySize() > 0
            ? shape.vocabularySize()
            : embedding.dims().length == 2 ? embedding.dims()[1] : 0;
    this.tokenEmbedding = reads.checked(embedding, shape, dim, vocabulary);
    this.layers = new Layer[shape.blockCount()];
    for (int l = 0; l < layers.length; l++) {
      layers[l] = readLayer(reads, shape, family, l);
    }
    this.outputNorm = vector(reads, shape, "output_norm.weight", dim);
    this.output =
        reads.has("output.weight")
            ? weight(reads, shape, "output.weight", dim, vocabulary)
            : new LlamaWeight(tokenEmbedding);
    checkEveryTensorIsRead(reads, shape);
    this.whole = new ShardPass(this, 0, 1, PartialSums.WHOLE);
    this.draft = "";
  }

  /** {@code target}'s weights with {@code draftLayer} after its layers (the draft's), named. */
  private LlamaModel(LlamaModel target, Layer draftLayer, String draft) {
    this.shape = target.shape;
    this.family = target.family;
    this.ropeFactors = target.ropeFactors;
    this.tokenEmbedding = target.tokenEmbedding;
    this.layers = Arrays.copyOf(target.layers, target.layers.length + 1);
    this.layers[target.layers.length] = draftLayer;
    this.outputNorm = target.outputNorm;
    this.output = target.output;
    this.whole = target.whole;
    this.draft = draft;
  }

  /** What the draft layer is ({@link #withDraftLayer}), or empty without one. */
  private final String draft;

  /**
   * This model with a draft layer (speculative decoding, docs/MODELS.md): tensors {@code
   * blk.N.*} of {@code file}, {@code N} being the block count (the layer after the target's
   * last), shaped as a layer of this model.
   *
   * @throws GgufUnsupportedException if the file has no such layer, naming the tensor
   */
  LlamaModel withDraftLayer(GgufFile file) {
    int n = shape.blockCount();
    String first = "blk." + n + ".attn_q.weight";
    if (!file.hasTensor(first)) {
      throw new GgufUnsupportedException(
          file.path()
              + " has no draft layer: speculative=draft-layer reads tensors blk."
              + n
              + ".* (the layer after the "
              + n
              + " of "
              + shape.name()
              + "), and "
              + first
              + " is missing; use draft-layer:copy-last for a copy of the last layer");
    }
    return new LlamaModel(this, readLayer(new Reads(file), shape, family, n), "draft-layer");
  }

  /**
   * This model with a draft layer that is a copy of its last layer's weights: the draft then
   * computes exactly what the target's last layer does, so its proposals are the target's tokens
   * whenever its K/V is intact (100% acceptance), which shows a tier that loses it.
   */
  LlamaModel withDraftCopyOfLast() {
    return new LlamaModel(this, layers[shape.blockCount() - 1], "draft-copy-last");
  }

  /**
   * Testing only: a draft layer that is a copy of layer {@code layer}, which, other than the
   * last, proposes wrong tokens most of the time (so steps roll back).
   */
  LlamaModel withDraftCopyOf(int layer) {
    Objects.checkIndex(layer, shape.blockCount());
    return new LlamaModel(this, layers[layer], "draft-copy-" + layer);
  }

  /** Whether this model has a draft layer (block {@link #blockCount()} of its KV). */
  boolean hasDraft() {
    return !draft.isEmpty();
  }

  /** The draft's identity, for the L3 model id: {@code draft-layer}, {@code draft-copy-last}. */
  String draftName() {
    return draft;
  }

  /** The target's layers. */
  int blockCount() {
    return shape.blockCount();
  }

  /** The blocks of a page's KV: the target's layers, and the draft layer's when it has one. */
  int kvBlocks() {
    return layers.length;
  }

  /** The KV shape: the target's, with {@link #kvBlocks()} blocks. */
  ModelHyperparameters kvShape() {
    if (!hasDraft()) {
      return shape;
    }
    return new ModelHyperparameters(
        shape.architecture(),
        shape.name(),
        shape.contextLength(),
        shape.embeddingLength(),
        layers.length,
        shape.feedForwardLength(),
        shape.headCount(),
        shape.headCountKv(),
        shape.rmsNormEpsilon(),
        shape.ropeFreqBase(),
        shape.ropeDimensionCount(),
        shape.ropeScaling(),
        shape.vocabularySize(),
        shape.headSize());
  }

  /** The tensor of Llama 3.1's RoPE frequency factors, one per rotated pair. */
  static final String ROPE_FREQS = "rope_freqs.weight";

  /**
   * A model file's tensors as the model reads them, each name asked for (whether present or not)
   * remembered, so that {@link #checkEveryTensorIsRead} accepts exactly what {@link #readLayer}
   * and the constructor read: one list of names, the code that reads them.
   */
  private static final class Reads {
    final GgufFile file;
    final Set<String> names = new LinkedHashSet<>();

    Reads(GgufFile file) {
      this.file = file;
    }

    boolean has(String name) {
      names.add(name);
      return file.hasTensor(name);
    }

    GgufTensor tensor(String name) {
      names.add(name);
      return file.tensor(name);
    }

    /**
     * The tensor {@code name}, whose dimensions (innermost first, as GGUF lists them) must be
     * {@code dims}: a file whose tensors do not match its own sizes would be read out of bounds
     * or answer garbage.
     */
    GgufTensor tensor(String name, ModelHyperparameters shape, long... dims) {
      return checked(tensor(name), shape, dims);
    }

    /** {@code t}, whose dimensions must be {@code dims}: the check of {@link #tensor}. */
    GgufTensor checked(GgufTensor t, ModelHyperparameters shape, long... dims) {
      String name = t.name();
      if (!Arrays.equals(t.dims(), dims)) {
        throw new GgufUnsupportedException(
            file.path()
                + ": tensor "
                + name
                + " has shape "
                + Arrays.toString(t.dims())
                + " where the file's "
                + shape.architecture()
                + ".* sizes (embedding_length "
                + shape.embeddingLength()
                + ", "
                + shape.headCount()
                + "/"
                + shape.headCountKv()
                + " heads of "
                + shape.headSize()
                + ", feed_forward_length "
                + shape.feedForwardLength()
                + ") ask for "
                + Arrays.toString(dims)
                + ": the file is damaged or its metadata is not its model's");
      }
      return t;
    }
  }

  /**
   * Refuses a file with a tensor this runner did not read: ignoring one (a bias on the attention
   * output or the feed-forward, experts, another architecture's extra weights) would answer
   * differently from the model, and llama.cpp refuses a file with tensors its architecture does
   * not create too. The blocks read are {@code 0} to the block count - 1; one past the last may
   * hold the tensors of a block as well: the draft layer that {@code speculative=draft-layer}
   * reads, and the target never uses.
   */
  private static void checkEveryTensorIsRead(Reads reads, ModelHyperparameters shape) {
    String firstBlock = "blk.0.";
    String draftBlock = "blk." + shape.blockCount() + ".";
    List<String> whole = new ArrayList<>();
    Set<String> perBlock = new LinkedHashSet<>();
    for (String name : reads.names) {
      if (name.startsWith(firstBlock)) {
        perBlock.add(name.substring(firstBlock.length()));
      } else if (!name.startsWith("blk.")) {
        whole.add(name);
      }
    }
    List<String> unread =
        reads.file.tensorInfos().stream()
            .map(GgufTensorInfo::name)
            .filter(
                name ->
                    !reads.names.contains(name)
                        && !(name.startsWith(draftBlock)
                            && perBlock.contains(name.substring(draftBlock.length()))))
            .toList();
    if (!unread.isEmpty()) {
      throw new GgufUnsupportedException(
          reads.file.path()
              + " has "
              + unread.size()
              + " tensor(s) kvtier's "
              + shape.architecture()
              + " runner does not compute with, first "
              + unread.getFirst()
              + (unread.size() > 1 ? ", " + unread.get(1) : "")
              + ": ignoring them would answer differently from the model; supported tensors: "
              + String.join(", ", whole)
              + ", and per block "
              + String.join(", ", perBlock)
              + " (the biases optional)");
    }
  }

  /**
   * The file's RoPE frequency factors ({@link #ROPE_FREQS}), or null without that tensor: one
   * positive finite factor per rotated pair.
   */
  private static float[] ropeFactors(Reads reads, ModelHyperparameters shape) {
    // llama.cpp's qwen2 graph passes no frequency factors to its RoPE: such a file's tensor is
    // not read, and so refused
    if (!shape.architecture().equals("llama") || !reads.has(ROPE_FREQS)) {
      return null;
    }
    GgufFile file = reads.file;
    GgufTensor t = reads.tensor(ROPE_FREQS);
    int pairs = shape.ropeDimensionCount() / 2;
    if (t.dims().length != 1 || t.dims()[0] != pairs) {
      throw new GgufUnsupportedException(
          file.path()
              + ": tensor "
              + ROPE_FREQS
              + " has shape "
              + Arrays.toString(t.dims())
              + " but RoPE rotates "
              + pairs
              + " pairs of each head (rope.dimension_count="
              + shape.ropeDimensionCount()
              + "): it needs one factor per pair");
    }
    float[] factors = t.dequantizeRow(0);
    for (int i = 0; i < factors.length; i++) {
      if (!(factors[i] > 0) || !Float.isFinite(factors[i])) {
        throw new GgufUnsupportedException(
            file.path()
                + ": tensor "
                + ROPE_FREQS
                + " holds "
                + factors[i]
                + " for pair "
                + i
                + ": RoPE frequency factors divide the angles and must be positive and finite");
      }
    }
    return factors;
  }

  private static Layer readLayer(Reads reads, ModelHyperparameters shape, Family family, int l) {
    String p = "blk." + l + ".";
    long head = shape.headSize();
    long dim = shape.embeddingLength();
    long q = shape.qDim();
    long kv = (long) shape.headCountKv() * shape.headSize();
    long ff = shape.feedForwardLength();
    return new Layer(
        vector(reads, shape, p + "attn_norm.weight", dim),
        weight(reads, shape, p + "attn_q.weight", dim, q),
        weight(reads, shape, p + "attn_k.weight", dim, kv),
        weight(reads, shape, p + "attn_v.weight", dim, kv),
        optionalVector(reads, shape, p + "attn_q.bias", q),
        optionalVector(reads, shape, p + "attn_k.bias", kv),
        optionalVector(reads, shape, p + "attn_v.bias", kv),
        required(family.headNorms(), reads, shape, p + "attn_q_norm.weight", head),
        required(family.headNorms(), reads, shape, p + "attn_k_norm.weight", head),
        weight(reads, shape, p + "attn_output.weight", q, dim),
        required(family.gemma(), reads, shape, p + "post_attention_norm.weight", dim),
        vector(reads, shape, p + "ffn_norm.weight", dim),
        weight(reads, shape, p + "ffn_gate.weight", dim, ff),
        weight(reads, shape, p + "ffn_up.weight", dim, ff),
        weight(reads, shape, p + "ffn_down.weight", ff, dim),
        required(family.gemma(), reads, shape, p + "post_ffw_norm.weight", dim));
  }

  /**
   * The model in {@code file}, whose weights stay mapped: close the file only after the model's
   * last use.
   */
  public static LlamaModel of(GgufFile file) {
    Objects.requireNonNull(file, "file");
    return new LlamaModel(file, ModelHyperparameters.of(file));
  }

  /** The matrix {@code name} of {@code rows} rows of {@code columns} weights. */
  private static LlamaWeight weight(
      Reads reads, ModelHyperparameters shape, String name, long columns, long rows) {
    return new LlamaWeight(reads.tensor(name, shape, columns, rows));
  }

  // Norm weights and biases are a few KB per layer: read once onto the heap.
  private static float[] vector(Reads reads, ModelHyperparameters shape, String name, long n) {
    return reads.tensor(name, shape, n).dequantizeRow(0);
  }

  /** The vector {@code name} where the architecture has it (then it must be there), else none. */
  private static Optional<float[]> required(
      boolean read, Reads reads, ModelHyperparameters shape, String name, long n) {
    return read ? Optional.of(vector(reads, shape, name, n)) : Optional.empty();
  }

  private static Optional<float[]> optionalVector(
      Reads reads, ModelHyperparameters shape, String name, long n) {
    return reads.has(name) ? Optional.of(vector(reads, shape, name, n)) : Optional.empty();
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
   * which must already hold positions {@code 0..start-1}: the layer-stepped pass of {@link
   * ShardPass} over every head, layer after layer.
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
    whole.checkStore(kv);
    int dim = shape.embeddingLength();
    float[] x = new float[n * dim];
    PassScratch scratch = new PassScratch();
    whole.embed(tokens, 0, n, x);
    for (int l = 0; l < shape.blockCount(); l++) {
      whole.layer(l, x, start, n, kv, scratch);
    }
    int first = allLogits ? 0 : n - 1;
    int rows = n - first;
    int vocabulary = vocabularySize();
    float[] flat = whole.logits(x, first, rows, scratch);
    float[][] logits = new float[rows][];
    for (int r = 0; r < rows; r++) {
      logits[r] = Arrays.copyOfRange(flat, r * vocabulary, (r + 1) * vocabulary);
    }
    return logits;
  }

  /** Layer {@code l}'s weights. */
  Layer layer(int l) {
    return layers[l];
  }

  /** What the architecture computes around the shared block. */
  Family family() {
    return family;
  }

  /** Each rotated pair's angle divisor ({@code rope_freqs.weight}), or null for none. */
  float[] ropeFactors() {
    return ropeFactors;
  }

  GgufTensor tokenEmbedding() {
    return tokenEmbedding;
  }

  float[] outputNorm() {
    return outputNorm;
  }

  LlamaWeight output() {
    return output;
  }

  @Override
  public String toString() {
    return shape.architecture()
        + " "
        + shape.name()
        + ": "
        + shape.blockCount()
        + " layers"
        + (hasDraft() ? " + " + draft : "")
        + ", dim "
        + shape.embeddingLength()
        + ", heads "
        + shape.headCount()
        + "/"
        + shape.headCountKv()
        + ", vocabulary "
        + vocabularySize();
  }
}
