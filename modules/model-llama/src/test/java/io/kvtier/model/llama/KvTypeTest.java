package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KvTypeTest {
  @Test
  void theOptionNamesATypeInAnyCaseAndOthersAreRefused() {
    assertThat(KvType.of("f16")).isEqualTo(KvType.F16);
    assertThat(KvType.of(" F32 ")).isEqualTo(KvType.F32);
    assertThatThrownBy(() -> KvType.of("bf16"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("kv-type=bf16 is not a K/V type kvtier stores; use one of [f32, f16]");
  }

  @Test
  void aPoolsElementSizeNamesItsTypeAndOtherSizesAreRefused() {
    assertThat(KvType.ofBytes(4)).isEqualTo(KvType.F32);
    assertThat(KvType.ofBytes(2)).isEqualTo(KvType.F16);
    assertThatThrownBy(() -> KvType.ofBytes(1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "kvtier.dtype-bytes=1 is not a K/V type of a GGUF model: 4 (F32) or 2 (F16,"
                + " kv-type=f16)");
  }

  @Test
  void f16RoundsToTheNearestHalfAndF32LeavesTheValues() {
    float[] v = {1f / 3, 65504f, 1e-8f, -2.5f};
    float[] same = v.clone();
    KvType.F32.round(same, 0, same.length);
    assertThat(same).containsExactly(v);
    KvType.F16.round(v, 1, 3);
    // the first value is outside the range asked for; 1e-8 is below binary16's smallest value
    assertThat(v).containsExactly(1f / 3, 65504f, 0f, -2.5f);
    float[] third = {1f / 3};
    KvType.F16.round(third, 0, 1);
    assertThat(third[0]).isEqualTo(0.33325195f);
  }
}
