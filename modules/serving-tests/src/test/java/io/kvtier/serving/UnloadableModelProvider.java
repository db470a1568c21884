package io.kvtier.serving;

import io.kvtier.spi.ProviderName;

/**
 * A model provider that cannot be instantiated, as gguf's cannot on a JVM without what it needs:
 * {@link ModelProviderSelectionTest} checks that opening another model never instantiates it.
 */
@ProviderName(UnloadableModelProvider.NAME)
public final class UnloadableModelProvider implements ModelProvider {
  /** Its name. */
  static final String NAME = "unloadable";

  /** Always fails, as a provider whose class needs a module the JVM lacks. */
  public UnloadableModelProvider() {
    throw new IllegalStateException("the unloadable model provider was instantiated");
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public ServingModel create(ModelOptions options) {
    throw new AssertionError("never instantiated");
  }
}
