package io.kvtier.model.tiny;

import io.kvtier.core.config.LayerMix;
import io.kvtier.serving.ModelOptions;
import io.kvtier.serving.ModelProvider;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.ProviderName;

/**
 * The tiny transformer as {@code kvtier serve --model tiny}: its options are {@code layers},
 * {@code layer-mix} (as {@link LayerMix#parse} reads it; sets the layers), {@code swa-cache}
 * ({@code pages} or {@code windows}), {@code max-context} and {@code seed}, each defaulting to
 * {@link ModelConfig#DEFAULTS}.
 */
@ProviderName(TinyModelProvider.NAME)
public final class TinyModelProvider implements ModelProvider {
  /** The model's name. */
  public static final String NAME = "tiny";

  /** A provider, for {@link java.util.ServiceLoader}. */
  public TinyModelProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public ServingModel create(ModelOptions options) {
    ModelConfig config = ModelConfig.DEFAULTS;
    config = config.withLayers(options.integer("layers", config.layers()));
    String mix = options.string("layer-mix", null);
    if (mix != null) {
      config = config.withLayerMix(LayerMix.parse(mix, "layer-mix"));
    }
    String swa = options.string("swa-cache", "pages");
    config =
        config.withWindowedSwa(
            switch (swa) {
              case "pages" -> false;
              case "windows" -> true;
              default ->
                  throw new IllegalArgumentException(
                      "swa-cache=" + swa + " is not an SWA cache mode: give pages or windows");
            });
    config = config.withMaxContext(options.integer("max-context", config.maxContext()));
    String seed = options.string("seed", null);
    if (seed != null) {
      try {
        config = config.withSeed(Long.parseLong(seed));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("seed=" + seed + " is not an integer", e);
      }
    }
    options.checkAllRead(NAME);
    return new TinyTransformer(config);
  }
}
