package io.kvtier.model.llama;

import io.kvtier.gguf.GgufException;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.ModelHyperparameters;
import io.kvtier.serving.ModelOptions;
import io.kvtier.serving.ModelProvider;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.ProviderName;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A GGUF {@code llama}, {@code qwen2}, {@code gemma2} or {@code gemma3} file as {@code kvtier serve --model gguf}: option {@code
 * file} (required) is the path of the {@code .gguf} file, {@code max-context} (optional) the most
 * tokens of one sequence, by default the file's context length, {@code kv-type} (optional)
 * {@code f32} (the default) or {@code f16}, how the pages store the K/V ({@link KvType}). The model
 * is a {@link LlamaServingModel}; its pools need the layout {@link LlamaServingModel#kvLayout}
 * gives (the file's layers, KV heads and head size, the K/V type's element size; any page size).
 */
@ProviderName(GgufModelProvider.NAME)
public final class GgufModelProvider implements ModelProvider {
  /** The model's name. */
  public static final String NAME = "gguf";

  /** What the provider reads, for its messages. */
  private static String supported() {
    // A method, not a constant: the kernels' class needs the Vector API, and the provider must
    // be instantiable without it to say so (unavailableReason).
    return "supported: GGUF versions 1 to 3, architectures "
        + String.join(", ", ModelHyperparameters.SUPPORTED_ARCHITECTURES)
        + ", weights "
        + Kernels.SUPPORTED_TYPES;
  }

  /** A provider, for {@link java.util.ServiceLoader}. */
  public GgufModelProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  /** Unavailable where the JVM has not resolved the Vector API (a class-path launch). */
  @Override
  public Optional<String> unavailableReason() {
    ModuleLayer layer =
        Optional.ofNullable(GgufModelProvider.class.getModule().getLayer())
            .orElse(ModuleLayer.boot());
    return layer.findModule("jdk.incubator.vector").isPresent()
        ? Optional.empty()
        : Optional.of(
            "it computes with the Vector API (jdk.incubator.vector), which this JVM has not"
                + " resolved: start java with --add-modules jdk.incubator.vector");
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException in one line: an unknown option, no {@code file}, a file that
   *     does not exist or cannot be read, or one this model does not run (with what it runs)
   */
  @Override
  public ServingModel create(ModelOptions options) {
    String file = options.string("file", null);
    String maxContextText = options.string("max-context", null);
    String speculative = options.string("speculative", null);
    String tokensText = options.string("num-speculative-tokens", null);
    String kvTypeText = options.string("kv-type", null);
    options.checkAllRead(NAME);
    KvType kvType = kvTypeText == null ? KvType.F32 : KvType.of(kvTypeText);
    int speculativeTokens = speculativeTokens(speculative, tokensText);
    int maxContext = maxContextText == null ? 0 : parse(maxContextText);
    if (file == null || file.isEmpty()) {
      throw new IllegalArgumentException(
          "model gguf needs option file=PATH, the .gguf file of a llama, qwen2, gemma2 or gemma3 model");
    }
    Path path = Path.of(file);
    if (!Files.isRegularFile(path)) {
      throw new IllegalArgumentException(
          "model gguf: file="
              + file
              + " does not exist or is not a file: give a .gguf file's path");
    }
    GgufFile opened;
    try {
      opened = GgufFile.open(path);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "model gguf: file=" + file + " cannot be read: " + e.getMessage(), e);
    } catch (GgufException e) {
      throw new IllegalArgumentException(
          "model gguf: file="
              + file
              + " is not a GGUF file this model runs: "
              + e.getMessage()
              + " ("
              + supported()
              + ")",
          e);
    }
    try {
      LlamaServingModel model =
          (maxContextText == null
                  ? LlamaServingModel.of(opened)
                  : LlamaServingModel.of(opened, maxContext))
              .withKvType(kvType);
      if (speculative == null) {
        return model;
      }
      if (speculative.startsWith(DRAFT_MODEL + ":")) {
        return model.withDraftModel(
            openDraft(speculative.substring(DRAFT_MODEL.length() + 1)), speculativeTokens);
      }
      return model.withDraftLayer(speculative.equals(DRAFT_COPY_LAST), speculativeTokens);
    } catch (GgufException e) {
      opened.close();
      throw new IllegalArgumentException(
          "model gguf: file="
              + file
              + " holds no model kvtier runs: "
              + e.getMessage()
              + " ("
              + supported()
              + ")",
          e);
    } catch (RuntimeException e) {
      opened.close();
      throw new IllegalArgumentException("model gguf: file=" + file + ": " + e.getMessage(), e);
    }
  }

  /** Option {@code speculative}'s value for the file's draft layer. */
  public static final String DRAFT_LAYER = "draft-layer";

  /** Option {@code speculative}'s value for a copy of the last layer (a testing draft). */
  public static final String DRAFT_COPY_LAST = "draft-layer:copy-last";

  /** Option {@code speculative}'s prefix of a separate draft model's file: {@code model:FILE}. */
  public static final String DRAFT_MODEL = "model";

  /** Default of {@code num-speculative-tokens}. */
  public static final int DEFAULT_SPECULATIVE_TOKENS = 4;

  /**
   * Checks options {@code speculative} and {@code num-speculative-tokens}.
   *
   * @return the tokens per step
   * @throws IllegalArgumentException for a draft kind this model does not offer, a token count
   *     that is not an integer in range, or a token count without a draft
   */
  static int speculativeTokens(String speculative, String tokens) {
    if (speculative == null) {
      if (tokens != null) {
        throw new IllegalArgumentException(
            "model gguf: num-speculative-tokens="
                + tokens
                + " without speculative: give speculative="
                + DRAFT_LAYER
                + " (--speculative) too, or drop it");
      }
      return 0;
    }
    if (speculative.startsWith(DRAFT_MODEL) && speculative.length() == DRAFT_MODEL.length()) {
      throw new IllegalArgumentException(
          "model gguf: speculative=model needs the draft's file: give model:FILE.gguf");
    }
    if (!speculative.equals(DRAFT_LAYER)
        && !speculative.equals(DRAFT_COPY_LAST)
        && !speculative.startsWith(DRAFT_MODEL + ":")) {
      throw new IllegalArgumentException(
          "model gguf: speculative="
              + speculative
              + " is not a draft: give "
              + DRAFT_LAYER
              + ", "
              + DRAFT_COPY_LAST
              + " or model:FILE.gguf");
    }
    int n;
    try {
      n = tokens == null ? DEFAULT_SPECULATIVE_TOKENS : Integer.parseInt(tokens.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "model gguf: num-speculative-tokens=" + tokens + " is not an integer: give 1 to 64", e);
    }
    LlamaServingModel.checkSpeculativeTokens(n);
    return n;
  }

  /** The draft model's file, opened; refused in one line naming it. */
  private static GgufFile openDraft(String draft) {
    Path path = Path.of(draft);
    if (!Files.isRegularFile(path)) {
      throw new IllegalArgumentException(
          "speculative=model:"
              + draft
              + ": the draft model's file does not exist or is not a file");
    }
    try {
      return GgufFile.open(path);
    } catch (IOException | GgufException e) {
      throw new IllegalArgumentException(
          "speculative=model:" + draft + " is not a GGUF file this model runs: " + e.getMessage(),
          e);
    }
  }

  private static int parse(String maxContext) {
    try {
      return Integer.parseInt(maxContext);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "model option max-context=" + maxContext + " is not an integer: give a whole number", e);
    }
  }
}
