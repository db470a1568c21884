package io.kvtier.cli.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.cli.model.LayerMix.Kind;
import io.kvtier.cli.model.LayerMix.Layer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The layer mix's syntax, its errors in the user's names, and the usable-prefix rule. */
class LayerMixTest {

  @Test
  void parsesOneKindPerLayerAndPrintsWhatItParsed() {
    LayerMix mix = LayerMix.parse(" full, SWA:64 ,recurrent,swa:1", "--model-layers");

    assertThat(mix.layers())
        .containsExactly(Layer.FULL, Layer.swa(64), Layer.RECURRENT, new Layer(Kind.SWA, 1));
    assertThat(mix.toString()).isEqualTo("full,swa:64,recurrent,swa:1");
    assertThat(LayerMix.parse(mix.toString(), "x")).isEqualTo(mix);
    assertThat(mix.hasRecurrent()).isTrue();
    assertThat(mix.allFull()).isFalse();
    assertThat(LayerMix.full(3).allFull()).isTrue();
    assertThat(LayerMix.full(3).toString()).isEqualTo("full,full,full");
  }

  @Test
  void aCountRepeatsAnElement() {
    LayerMix mix = LayerMix.parse("full, swa:64*3 ,recurrent*2", "--model-layers");

    assertThat(mix.toString()).isEqualTo("full,swa:64,swa:64,swa:64,recurrent,recurrent");
    assertThat(LayerMix.parse("full*1", "x")).isEqualTo(LayerMix.full(1));
    assertThatThrownBy(() -> LayerMix.parse("full,swa:64*0", "--model-layers"))
        .hasMessage(
            "element 2 of --model-layers='full,swa:64*0' is 'swa:64*0': the count after '*' must"
                + " be a whole number from 1 to 4096, as in swa:64*5");
    assertThatThrownBy(() -> LayerMix.parse("full*x", "--model-layers"))
        .hasMessageContaining("is 'full*x': the count after '*' must be a whole number");
    assertThatThrownBy(() -> LayerMix.parse("full*5000", "--model-layers"))
        .hasMessageContaining("from 1 to 4096");
    assertThatThrownBy(() -> LayerMix.parse("*2", "--model-layers"))
        .hasMessageContaining("element 1 of --model-layers='*2' is '' (empty)");
  }

  @Test
  void badElementsNameTheSourceTheElementAndTheFix() {
    assertThatThrownBy(() -> LayerMix.parse("full,swa", "--model-layers"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "element 2 of --model-layers='full,swa' is 'swa': an SWA layer needs its window, as"
                + " in swa:64");
    assertThatThrownBy(() -> LayerMix.parse("swa:x", "--model-layers"))
        .hasMessageContaining("element 1 of --model-layers='swa:x'")
        .hasMessageContaining("the window 'x' is not a whole number of tokens");
    assertThatThrownBy(() -> LayerMix.parse("full,swa:0", "kvtier.model-layers"))
        .hasMessageContaining("element 2 of kvtier.model-layers='full,swa:0'")
        .hasMessageContaining("the window must be >= 1 token");
    assertThatThrownBy(() -> LayerMix.parse("full,mamba", "--model-layers"))
        .hasMessage(
            "element 2 of --model-layers='full,mamba' is 'mamba': each layer is full, swa:W (W >="
                + " 1 tokens) or recurrent");
    assertThatThrownBy(() -> LayerMix.parse("full,,full", "--model-layers"))
        .hasMessageContaining("element 2 of --model-layers='full,,full' is '' (empty)");
    assertThatThrownBy(() -> LayerMix.parse("recurrent:4", "--model-layers"))
        .hasMessageContaining("is 'recurrent:4': each layer is full, swa:W");
    assertThatThrownBy(() -> LayerMix.parse("  ", "--model-layers"))
        .hasMessage(
            "--model-layers is empty: give one layer kind per layer, e.g. full,swa:64,recurrent");
    assertThatThrownBy(() -> new LayerMix(List.of()))
        .hasMessage("a layer mix needs at least one layer");
    assertThatThrownBy(() -> new Layer(Kind.SWA, 0))
        .hasMessage("an SWA layer's window=0 must be >= 1");
    assertThatThrownBy(() -> new Layer(Kind.FULL, 4))
        .hasMessage("a FULL layer has no window, got window=4");
    assertThatThrownBy(() -> LayerMix.full(0)).hasMessage("layers=0 must be >= 1");
  }

  @Test
  void aRecurrentLayerMakesNoMatchedPrefixUsable() {
    assertThat(LayerMix.full(2).usablePrefix(48)).isEqualTo(48);
    assertThat(LayerMix.parse("full,swa:8", "x").usablePrefix(48)).isEqualTo(48);
    assertThat(LayerMix.parse("full,recurrent", "x").usablePrefix(48)).isZero();
    assertThat(LayerMix.parse("full,recurrent", "x").usablePrefix(0)).isZero();
    assertThatThrownBy(() -> LayerMix.full(1).usablePrefix(-1))
        .hasMessage("matchedTokens=-1 must be >= 0");
  }

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
  void swaWindowsKeepTheFullLayersInThePagesAndTheRestInTheSnapshots() {
    LayerMix mix = LayerMix.parse("swa:3,full,recurrent,full,swa:6", "x");

    assertThat(mix.pageLayers(false)).isEqualTo(5);
    assertThat(mix.pageLayers(true)).isEqualTo(2);
    assertThat(LayerMix.parse("swa:3,recurrent", "x").pageLayers(true)).isEqualTo(1);
    assertThat(java.util.stream.IntStream.range(0, 5).map(l -> mix.pageBlock(l, true)).toArray())
        .containsExactly(-1, 0, -1, 1, -1);
    assertThat(java.util.stream.IntStream.range(0, 5).map(l -> mix.pageBlock(l, false)).toArray())
        .containsExactly(0, 1, 2, 3, 4);
    assertThat(LayerMix.parse("full,swa:4", "x").needsSnapshots(false)).isFalse();
    assertThat(LayerMix.parse("full,swa:4", "x").needsSnapshots(true)).isTrue();
    assertThat(LayerMix.parse("full,recurrent", "x").needsSnapshots(false)).isTrue();
    assertThat(LayerMix.full(2).needsSnapshots(true)).isFalse();
    // 2 and 5 positions of K and V at 256 bytes, a state of 64 longs, in layer order.
    assertThat(mix.windowSnapshotBytes(64, 256)).isEqualTo(1024 + 512 + 2560);
    assertThat(mix.windowSnapshotOffset(0, 64, 256)).isZero();
    assertThat(mix.windowSnapshotOffset(2, 64, 256)).isEqualTo(1024);
    assertThat(mix.windowSnapshotOffset(4, 64, 256)).isEqualTo(1536);
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
