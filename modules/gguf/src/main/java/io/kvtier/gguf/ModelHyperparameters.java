package io.kvtier.gguf;

import java.util.List;
import java.util.Objects;

/**
 * The shape of a transformer described by a GGUF file's metadata, for the architectures kvtier
 * runs: {@code llama} (Llama 1-3, Mistral, TinyLlama, SmolLM), {@code qwen2}, and Google's {@code
 * gemma2} and {@code gemma3} (text). What an architecture computes beyond these sizes (Gemma's
 * sliding windows, norms and soft caps) its runner reads from the file itself.
 *
 * @param architecture {@code general.architecture}
 * @param name {@code general.name}, or the file name when absent
 * @param contextLength {@code {arch}.context_length}
 * @param embeddingLength {@code {arch}.embedding_length}
 * @param blockCount {@code {arch}.block_count} (layers)
 * @param feedForwardLength {@code {arch}.feed_forward_length}
 * @param headCount {@code {arch}.attention.head_count} (query heads)
 * @param headCountKv {@code {arch}.attention.head_count_kv}, the head count when absent
 * @param rmsNormEpsilon {@code {arch}.attention.layer_norm_rms_epsilon}
 * @param ropeFreqBase {@code {arch}.rope.freq_base}, 10000 when absent
 * @param ropeDimensionCount {@code {arch}.rope.dimension_count}, the head size when absent
 * @param ropeScaling the RoPE scaling keys
 * @param vocabularySize {@code {arch}.vocab_size}, else the length of
 *     {@code tokenizer.ggml.tokens}, else 0
 * @param headSize {@code {arch}.attention.key_length} (which {@code value_length} must equal),
 *     else the embedding length over the head count
 */
public record ModelHyperparameters(
    String architecture,
    String name,
    int contextLength,
    int embeddingLength,
    int blockCount,
    int feedForwardLength,
    int headCount,
    int headCountKv,
    float rmsNormEpsilon,
    float ropeFreqBase,
    int ropeDimensionCount,
    RopeScaling ropeScaling,
    int vocabularySize,
    int headSize) {

  /** The architectures {@link #of} reads. */
  public static final List<String> SUPPORTED_ARCHITECTURES =
      List.of("llama", "qwen2", "gemma2", "gemma3");

  /** Validates the shape. */
  public ModelHyperparameters {
    Objects.requireNonNull(architecture, "architecture");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(ropeScaling, "ropeScaling");
    if (contextLength <= 0
        || embeddingLength <= 0
        || blockCount <= 0
        || feedForwardLength <= 0
        || headCount <= 0
        || headCountKv <= 0) {
      throw new GgufException(
          "model "
              + name
              + ": sizes must be positive: context="
              + contextLength
              + " embedding="
              + embeddingLength
              + " blocks="
              + blockCount
              + " feedForward="
              + feedForwardLength
              + " heads="
              + headCount
              + " kvHeads="
              + headCountKv);
    }
    if (headSize <= 0 || headCount % headCountKv != 0) {
      throw new GgufException(
          "model "
              + name
              + ": embedding "
              + embeddingLength
              + " must divide into "
              + headCount
              + " heads (unless attention.key_length gives their size: "
              + headSize
              + "), and those into "
              + headCountKv
              + " KV heads");
    }
  }

  /** Floats per query row: the heads times their size (the width, unless the heads' own). */
  public int qDim() {
    return headCount * headSize;
  }

  /**
   * Reads the hyperparameters from {@code file}.
   *
   * @throws GgufUnsupportedException if the architecture is not one of
   *     {@link #SUPPORTED_ARCHITECTURES}
   * @throws GgufMetadataException if a required key is missing or of the wrong type
   */
  public static ModelHyperparameters of(GgufFile file) {
    String arch = architecture(file);
    if (!SUPPORTED_ARCHITECTURES.contains(arch)) {
      throw new GgufUnsupportedException(
          file.path()
              + ": architecture '"
              + arch
              + "' is not supported; supported: "
              + String.join(", ", SUPPORTED_ARCHITECTURES));
    }
    String p = arch + ".";
    int heads = file.getInt(p + "attention.head_count");
    int embedding = file.getInt(p + "embedding_length");
    int headSize =
        file.has(p + "attention.key_length")
            ? file.getInt(p + "attention.key_length")
            : heads > 0 && embedding % heads == 0 ? embedding / heads : 0;
    unsupportedShape(file, p, headSize);
    int rotated = file.getInt(p + "rope.dimension_count", headSize);
    if (headSize > 0 && rotated != headSize) {
      throw new GgufUnsupportedException(
          file.path()
              + ": "
              + p
              + "rope.dimension_count="
              + rotated
              + " is not the head size of "
              + headSize
              + ": RoPE over part of a head is not supported (llama.cpp's graphs for these"
              + " architectures rotate whole heads too)");
    }
    int vocabulary =
        file.has(p + "vocab_size")
            ? file.getInt(p + "vocab_size")
            : file.has("tokenizer.ggml.tokens") ? file.getArray("tokenizer.ggml.tokens").size() : 0;
    return new ModelHyperparameters(
        arch,
        name(file),
        file.getInt(p + "context_length"),
        embedding,
        file.getInt(p + "block_count"),
        file.getInt(p + "feed_forward_length"),
        heads,
        file.getInt(p + "attention.head_count_kv", heads),
        file.getFloat(p + "attention.layer_norm_rms_epsilon"),
        file.getFloat(p + "rope.freq_base", 10_000f),
        rotated,
        RopeScaling.of(file, arch),
        vocabulary,
        headSize);
  }

  /**
   * Refuses what the file's metadata says of its layers that kvtier's runner does not compute,
   * rather than run the file and answer differently from the model: experts ({@code
   * expert_count} above 0, a mixture-of-experts model) and value heads of another size than the
   * key heads ({@code attention.value_length} other than {@code headSize}, the key heads' size).
   * Heads of another size than the width over the head count are read ({@code
   * attention.key_length}, as Mistral NeMo's 128 of 5,120 over 32).
   */
  private static void unsupportedShape(GgufFile file, String p, int headSize) {
    if (file.has(p + "expert_count") && file.getInt(p + "expert_count") > 0) {
      throw new GgufUnsupportedException(
          file.path()
              + ": "
              + p
              + "expert_count="
              + file.getInt(p + "expert_count")
              + ": mixture-of-experts layers are not supported; supported: dense feed-forward"
              + " layers");
    }
    if (file.has(p + "attention.value_length")) {
      int values = file.getInt(p + "attention.value_length");
      if (values != headSize) {
        throw new GgufUnsupportedException(
            file.path()
                + ": "
                + p
                + "attention.value_length="
                + values
                + " is not the key heads' size of "
                + headSize
                + ": value heads of another size than the key heads are not supported");
      }
    }
  }

  /** {@code general.architecture} of {@code file}. */
  public static String architecture(GgufFile file) {
    return file.getString("general.architecture");
  }

  /** {@code general.name} of {@code file}, or its file name when absent. */
  public static String name(GgufFile file) {
    return file.getString("general.name", file.path().getFileName().toString());
  }
}
