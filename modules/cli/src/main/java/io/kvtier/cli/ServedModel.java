package io.kvtier.cli;

import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.LayerMix;
import io.kvtier.gguf.GgufFile;
import io.kvtier.model.llama.GgufModelProvider;
import io.kvtier.model.llama.KvType;
import io.kvtier.model.llama.LlamaServingModel;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyModelProvider;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.ModelProvider;
import io.kvtier.serving.ServingModel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The model {@code kvtier serve} serves, found by name through {@link ModelProvider} as an
 * embedder finds one, with what serve takes from it: the {@code kvtier.*} keys of its KV layout,
 * the id that salts its L3 keys, and the words of the startup line.
 *
 * @param model the model
 * @param fixedKeys the keys the model fixes, to their values
 * @param l3ModelId the L3 keys' model id (unless {@code kvtier.l3-model-id} is configured)
 * @param description what the startup line says of the model
 * @param layerMix the tiny transformer's layer mix, for {@code /v1/models}; empty for a file
 * @param tiny the tiny transformer's config; empty for a file
 * @param name the model's own name, the default of {@code --served-model-name}
 */
record ServedModel(
    ServingModel model,
    Map<String, String> fixedKeys,
    String l3ModelId,
    String description,
    Optional<String> layerMix,
    Optional<ModelConfig> tiny,
    String name)
    implements AutoCloseable {

  /** The name of the tiny transformer served by default. */
  static final String TINY_NAME = "kvtier-tiny";

  /** Sampled blocks of a file's tensor data that enter its L3 model id. */
  private static final int SAMPLES = 64;

  private static final int SAMPLE_BYTES = 4096;

  /**
   * The tiny transformer with a seed, a layer mix and an SWA cache mode.
   *
   * @param seed the weights' seed
   * @param mix the layer kinds
   * @param swaCache {@code pages} or {@code windows}
   * @param windowed whether the SWA windows mode is on, for the startup line
   * @param maxContext the most tokens of one sequence; empty for the model's default
   * @return the served model
   */
  static ServedModel tiny(
      long seed, LayerMix mix, String swaCache, boolean windowed, Optional<Integer> maxContext) {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("seed", Long.toString(seed));
    options.put("layer-mix", mix.toString());
    options.put("swa-cache", swaCache);
    maxContext.ifPresent(m -> options.put("max-context", Integer.toString(m)));
    TinyTransformer model = (TinyTransformer) ModelProvider.open(TinyModelProvider.NAME, options);
    ModelConfig config = model.config();
    return new ServedModel(
        model,
        layout(
            config.pageLayers(), config.heads(), config.headDim(), Float.BYTES, config.vocabSize()),
        config.l3ModelId(),
        "layers " + mix + (windowed ? ", SWA windows" : ""),
        Optional.of(mix.toString()),
        Optional.of(config),
        TINY_NAME);
  }

  /**
   * A GGUF file's model ({@code gguf}: llama, qwen2, gemma2 or gemma3).
   *
   * @param file the {@code .gguf} file
   * @param maxContext the most tokens of one sequence; empty for the file's context length
   * @return the served model; close it when the server has stopped
   * @throws IllegalArgumentException in one line, naming the file: missing, unreadable, or a
   *     model kvtier does not run (with what it runs)
   */
  static ServedModel gguf(Path file, Optional<Integer> maxContext) {
    return gguf(file, maxContext, Optional.empty(), Optional.empty(), Optional.empty());
  }

  /**
   * A GGUF file's model, decoding speculatively with a draft when {@code speculative} names one
   * (docs/MODELS.md, "Speculative decoding"): the model options {@code speculative} and {@code
   * num-speculative-tokens}.
   *
   * @param file the {@code .gguf} file
   * @param maxContext the most tokens of one sequence; empty for the file's context length
   * @param speculative the draft: {@code draft-layer}, {@code draft-layer:copy-last} or {@code
   *     model:FILE}; empty for none
   * @param speculativeTokens tokens the draft proposes a step; empty for the default
   * @param kvType how the pages store the K/V, {@code f32} or {@code f16}; empty for F32
   * @return the served model; close it when the server has stopped
   * @throws IllegalArgumentException in one line, naming the file or the option
   */
  static ServedModel gguf(
      Path file,
      Optional<Integer> maxContext,
      Optional<String> speculative,
      Optional<Integer> speculativeTokens,
      Optional<String> kvType) {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("file", file.toString());
    maxContext.ifPresent(m -> options.put("max-context", Integer.toString(m)));
    kvType.ifPresent(t -> options.put("kv-type", t));
    speculative.ifPresent(d -> options.put("speculative", d));
    speculativeTokens.ifPresent(k -> options.put("num-speculative-tokens", Integer.toString(k)));
    LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open(GgufModelProvider.NAME, options);
    try {
      GgufFile gguf = model.file();
      String tokenizer =
          switch (gguf.getString("tokenizer.ggml.model", "none")) {
            case "llama" -> "SentencePiece";
            case "gpt2" -> "BPE " + gguf.getString("tokenizer.ggml.pre", "default");
            case "none" -> "no tokenizer";
            default -> gguf.getString("tokenizer.ggml.model", "none");
          };
      boolean random = gguf.getBoolean("kvtier.random_weights", false);
      String description =
          String.format(
              "%s %s%s: %d layers, dim %d, %d/%d heads of %d%s, feed-forward %d, %s, %s"
                  + " vocabulary of %d, context %d%s%s",
              model.architecture(),
              file.getFileName(),
              random ? ", random weights" : "",
              model.layers(),
              model.dim(),
              model.heads(),
              model.kvHeads(),
              model.headSize(),
              (model.scalesRopeFrequencies() ? " (RoPE frequency factors)" : "")
                  + (model.slidingWindows().isEmpty() ? "" : ", " + model.slidingWindows()),
              model.feedForwardLength(),
              model.tensorType(),
              tokenizer,
              model.vocabularySize(),
              model.maxContext(),
              model.kvType() == KvType.F32 ? "" : ", " + model.kvType() + " K/V",
              model.speculativeTokens() > 0
                  ? "; speculative: "
                      + model.draftDescription()
                      + ", "
                      + model.speculativeTokens()
                      + " tokens a step"
                  : "");
      return new ServedModel(
          model,
          layout(
              model.kvBlocks(),
              model.kvHeads(),
              model.headSize(),
              model.kvType().bytes(),
              model.vocabularySize()),
          // The draft's K/V is in the pages: its identity is in the L3 keys' model id; so are the
          // K/V's type (F16 pages hold other bytes) and the RoPE frequency scaling, which kvtier
          // before 2026-12-05 left out of the KV it stored.
          "gguf-"
              + contentId(file)
              + (model.kvType() == KvType.F32 ? "" : "-kv-" + model.kvType().option())
              + (model.scalesRopeFrequencies() ? "-rope-freqs" : "")
              + (model.draftName().isEmpty() ? "" : "-" + model.draftName()),
          description,
          Optional.empty(),
          Optional.empty(),
          model.name());
    } catch (RuntimeException e) {
      model.close();
      throw e;
    }
  }

  private static Map<String, String> layout(
      int layers, int kvHeads, int headDim, int dtypeBytes, int vocabulary) {
    Map<String, String> keys = new LinkedHashMap<>();
    keys.put(KvTierKeys.LAYERS, Integer.toString(layers));
    keys.put(KvTierKeys.KV_HEADS, Integer.toString(kvHeads));
    keys.put(KvTierKeys.HEAD_DIM, Integer.toString(headDim));
    keys.put(KvTierKeys.DTYPE_BYTES, Integer.toString(dtypeBytes));
    keys.put(KvTierKeys.VOCAB_SIZE, Integer.toString(vocabulary));
    return Map.copyOf(keys);
  }

  /**
   * What tells one file's weights from another's for the L3 keys, which outlive the process: the
   * SHA-256 (first 16 hex digits) of the file's size, its first 1 MiB (header, metadata, tensor
   * infos) and {@value #SAMPLES} blocks of {@value #SAMPLE_BYTES} bytes spread over the rest.
   * Reading every byte of a multi-GB file at each start would cost seconds; two files that
   * differ only between the samples (never seen: weights of different models or seeds differ
   * everywhere) would share keys, so a deployment that edits weights in place sets {@code
   * kvtier.l3-model-id} itself.
   */
  static String contentId(Path file) {
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      long size = channel.size();
      sha.update(ByteBuffer.allocate(Long.BYTES).putLong(0, size));
      read(channel, 0, (int) Math.min(size, 1 << 20), sha);
      for (int i = 1; i <= SAMPLES; i++) {
        long at = size * i / (SAMPLES + 1);
        read(channel, at, (int) Math.min(SAMPLE_BYTES, size - at), sha);
      }
      return HexFormat.of().formatHex(sha.digest()).substring(0, 16);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JDK has no SHA-256", e);
    }
  }

  private static void read(FileChannel channel, long at, int length, MessageDigest sha)
      throws IOException {
    ByteBuffer buffer = ByteBuffer.allocate(length);
    while (buffer.hasRemaining()) {
      if (channel.read(buffer, at + buffer.position()) < 0) {
        break;
      }
    }
    buffer.flip();
    sha.update(buffer);
  }

  /** Releases the model's file, if it maps one; after the server stopped. */
  @Override
  public void close() {
    if (model instanceof AutoCloseable closeable) {
      try {
        closeable.close();
      } catch (Exception e) {
        throw new IllegalStateException("closing the model failed: " + e.getMessage(), e);
      }
    }
  }
}
