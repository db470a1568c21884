package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.ServiceConfigurationError;
import org.junit.jupiter.api.Test;

/**
 * A model is selected by its provider's {@code @ProviderName} without instantiating the others,
 * so that one model's missing needs (gguf's Vector API on a class-path JVM) never break another.
 */
class ModelProviderSelectionTest {

  @Test
  void openingOneModelInstantiatesNoOtherProvider() {
    assertThat(ModelProvider.open("tiny", Map.of()).vocabularySize()).isPositive();
  }

  @Test
  void anUnknownNameListsEveryInstalledNameWithoutInstantiating() {
    assertThatThrownBy(() -> ModelProvider.named("nope"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no model named nope is installed: give one of [")
        .hasMessageContaining("tiny")
        .hasMessageContaining(UnloadableModelProvider.NAME);
  }

  @Test
  void theNamedProviderIsInstantiatedAndItsFailureSurfaces() {
    assertThatThrownBy(() -> ModelProvider.named(UnloadableModelProvider.NAME))
        .isInstanceOf(ServiceConfigurationError.class)
        .hasRootCauseMessage("the unloadable model provider was instantiated");
  }
}
