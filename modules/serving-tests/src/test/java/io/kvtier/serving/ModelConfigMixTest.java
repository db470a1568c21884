package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.LayerMix;
import io.kvtier.model.tiny.ModelConfig;
import org.junit.jupiter.api.Test;

/** The tiny model's layer mix and a completion's cached tokens (from LayerMixTest, which moved to core). */
class ModelConfigMixTest {
  @Test
  void aCompletionsCachedTokensAreAtMostItsMatch() {
    Completion usableNone = new Completion(new int[] {1}, 0, 8, 4, 4);
    assertThat(usableNone.matchedTokens()).isEqualTo(16);
    assertThat(usableNone.cachedTokens()).isZero();
    assertThat(new Completion(new int[] {1}, 12, 8, 4).matchedTokens()).isEqualTo(12);
    assertThatThrownBy(() -> new Completion(new int[] {1}, 17, 8, 4, 4))
        .hasMessage(
            "cachedTokens=17 must be at most the matched deviceHitTokens=8 + hostHitTokens=4 +"
                + " l3HitTokens=4, none negative");
    assertThatThrownBy(() -> new Completion(new int[] {1}, -1, 0, 0, 0))
        .hasMessageContaining("cachedTokens=-1 must be at most");
    assertThatThrownBy(() -> new Completion(new int[] {1}, 0, 0, -4, 0))
        .hasMessageContaining("hostHitTokens=-4");
  }

  @Test
  void theModelConfigHoldsOneKindPerLayer() {
    LayerMix mix = LayerMix.parse("full,swa:16,recurrent", "x");
    ModelConfig config = ModelConfig.DEFAULTS.withLayerMix(mix);

    assertThat(config.layers()).isEqualTo(3);
    assertThat(config.layerMix()).isEqualTo(mix);
    assertThat(config.withSeed(7).layerMix()).isEqualTo(mix);
    assertThat(config.withMaxContext(64).layerMix()).isEqualTo(mix);
    assertThat(ModelConfig.DEFAULTS.layerMix()).isEqualTo(LayerMix.full(2));
    assertThat(ModelConfig.DEFAULTS.withLayers(3).layerMix()).isEqualTo(LayerMix.full(3));
    // The L3 key of a full-attention model is the one it had before mixes; any mix changes it.
    assertThat(ModelConfig.DEFAULTS.l3ModelId()).isEqualTo("tiny-transformer-seed-42");
    assertThat(config.l3ModelId())
        .isEqualTo("tiny-transformer-seed-42-layers-full,swa:16,recurrent");
    assertThatThrownBy(() -> config.withLayers(2))
        .hasMessage(
            "layers=2 would drop the layer mix 'full,swa:16,recurrent': set the layers with"
                + " withLayerMix");
    assertThatThrownBy(() -> new ModelConfig(512, 2, 4, 16, 128, 1024, 1, mix))
        .hasMessage(
            "the layer mix 'full,swa:16,recurrent' has 3 layers but layers=2: give one layer kind"
                + " per layer (withLayerMix sets both)");
  }

  @Test
  void aModelWithSwaWindowsHasPagesOfItsFullLayersAndItsOwnL3Id() {
    LayerMix mix = LayerMix.parse("full,swa:16,recurrent", "x");
    ModelConfig pages = ModelConfig.DEFAULTS.withLayerMix(mix);
    ModelConfig windows = pages.withWindowedSwa(true);

    assertThat(pages.kvLayout(4).layers()).isEqualTo(3);
    assertThat(windows.kvLayout(4).layers()).isEqualTo(1);
    assertThat(windows.kvLayout(4, 2).layers()).isEqualTo(1);
    assertThat(windows.needsSnapshots()).isTrue();
    assertThat(windows.withSeed(7).windowedSwa()).isTrue();
    assertThat(windows.withMaxContext(64).windowedSwa()).isTrue();
    assertThat(windows.l3ModelId())
        .isEqualTo("tiny-transformer-seed-42-layers-full,swa:16,recurrent-swa-windows");
    assertThatThrownBy(() -> pages.checkLayout(windows.kvLayout(4)))
        .hasMessageContaining("set kvtier.layers=3");
    assertThatThrownBy(() -> windows.checkLayout(pages.kvLayout(4)))
        .hasMessageContaining("set kvtier.layers=1");
    assertThatThrownBy(
            () ->
                ModelConfig.DEFAULTS
                    .withLayerMix(LayerMix.parse("full,recurrent", "x"))
                    .withWindowedSwa(true))
        .hasMessage(
            "SWA windows are asked for but the layer mix 'full,recurrent' has no swa:W layer:"
                + " keep SWA pages (the default), or give a mix with an SWA layer such as"
                + " full,swa:64");
  }
}
