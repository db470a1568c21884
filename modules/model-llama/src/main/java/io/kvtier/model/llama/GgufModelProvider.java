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
 * A GGUF {@code llama} or {@code qwen2} file as {@code kvtier serve --model gguf}: option {@code
 * file} (required) is the path of the {@code .gguf} file, {@code max-context} (optional) the most
 * tokens of one sequence, by default the file's context length. The model is a {@link
 * LlamaServingModel}; its pools need the layout {@link LlamaServingModel#kvLayout} gives (the
 * file's layers, KV heads and head size, F32; any page size).
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
    options.checkAllRead(NAME);
    int maxContext = maxContextText == null ? 0 : parse(maxContextText);
    if (file == null || file.isEmpty()) {
      throw new IllegalArgumentException(
          "model gguf needs option file=PATH, the .gguf file of a llama or qwen2 model");
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
      return maxContextText == null
          ? LlamaServingModel.of(opened)
          : LlamaServingModel.of(opened, maxContext);
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

  private static int parse(String maxContext) {
    try {
      return Integer.parseInt(maxContext);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "model option max-context=" + maxContext + " is not an integer: give a whole number", e);
    }
  }
}
