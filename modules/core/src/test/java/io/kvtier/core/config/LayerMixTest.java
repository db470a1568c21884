package io.kvtier.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.LayerMix.Kind;
import io.kvtier.core.config.LayerMix.Layer;
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
}
