package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.LayerMix;
import io.kvtier.spi.KvLayout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The slots of a windowed snapshot (docs/HYBRID.md §8): the window bytes of a rank's shard over
 * a page slot of the full-attention layers, rounded up, at least 1.
 */
class HybridOptionsTest {

  @ParameterizedTest(name = "{0}, {1} heads x {2} x {3} B, page {4}: {5}")
  @CsvSource(
      delimiter = '|',
      value = {
        // the simulator's shape: 63 positions of one SWA layer over 16-token pages of one block
        "full,swa:64|1|4|2|16|4",
        // plus a recurrent state of 4 x 8 bytes: 1008 + 32 bytes over 256
        "full,swa:64,recurrent|1|4|2|16|5",
        "full,swa:64|1|4|2|512|1",
        "full,recurrent,swa:8|1|4|2|512|1",
        // five SWA layers over one full one: 5 x 63 / 16 = 19.7
        "full,swa:64*5|1|4|2|16|20",
        // two full layers per page: 7 positions over 2 x 4
        "full*2,swa:8|1|4|2|4|1",
        // a real shape: 4095 positions of 8 x 128 bf16 over 16-token pages of one layer
        "full,swa:4096|8|128|2|16|256",
      })
  void aWindowedSnapshotTakesTheSlotsItsBytesNeed(
      String mix, int heads, int headDim, int dtype, int page, int slots) {
    LayerMix m = LayerMix.parse(mix, "test");
    KvLayout shape = new KvLayout(2, heads, headDim, dtype, page);

    assertThat(HybridOptions.windowSlots(m, shape)).isEqualTo(slots);
    assertThat(HybridOptions.mix(mix, 4, "windows", shape))
        .extracting(
            HybridOptions.Mix::snapshotSlots,
            HybridOptions.Mix::windowedSwa,
            HybridOptions.Mix::snapshotIntervalPages,
            HybridOptions.Mix::pageLayers)
        .containsExactly(slots, true, 4, m.pageLayers(true));
  }

  @ParameterizedTest
  @CsvSource({"full,swa:64", "full,swa:64,recurrent", "full*3"})
  void pagesDecideAsBeforeTheOption(String mix) {
    HybridOptions.Mix given = HybridOptions.mix(mix, null, "pages", null);
    HybridOptions.Mix absent = HybridOptions.mix(mix, null);

    assertThat(given).isEqualTo(absent);
    assertThat(given.windowedSwa()).isFalse();
    assertThat(given.snapshotSlots()).isEqualTo(mix.contains("recurrent") ? 1 : 0);
  }

  @ParameterizedTest
  @CsvSource({"full,recurrent", "full*3"})
  void windowsNeedAnSwaLayer(String mix) {
    assertThatThrownBy(() -> HybridOptions.mix(mix, null, "windows", null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--swa-cache windows")
        .hasMessageContaining("has no swa:W layer");
  }
}
