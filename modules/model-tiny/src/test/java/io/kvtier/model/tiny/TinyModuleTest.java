package io.kvtier.model.tiny;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.serving.ModelProvider;
import io.kvtier.serving.ServingModel;
import io.kvtier.testkit.ModuleSuite;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.model.tiny: it provides the model {@code tiny}, found by name. */
class TinyModuleTest extends ModuleSuite {

  TinyModuleTest() {
    super(TinyTransformer.class.getModule(), "io.kvtier.model.tiny");
    provides(ModelProvider.class, TinyModelProvider.class);
  }

  @Test
  void theServingEngineFindsTheTinyModelByNameWithItsOptions() {
    ServingModel model =
        ModelProvider.open("tiny", Map.of("layer-mix", "full,swa:8,recurrent", "seed", "7"));

    assertThat(model).isInstanceOf(TinyTransformer.class);
    ModelConfig config = ((TinyTransformer) model).config();
    assertThat(config.layers()).isEqualTo(3);
    assertThat(config.seed()).isEqualTo(7);
    assertThat(model.vocabularySize()).isEqualTo(ModelConfig.DEFAULT_VOCAB_SIZE);
    assertThatThrownBy(() -> ModelProvider.open("tiny", Map.of("heads", "8")))
        .hasMessage("model tiny has no option(s) [heads]: drop them");
    assertThatThrownBy(() -> ModelProvider.open("huge", Map.of()))
        .hasMessageStartingWith("no model named huge is installed: give one of [tiny]");
  }
}
