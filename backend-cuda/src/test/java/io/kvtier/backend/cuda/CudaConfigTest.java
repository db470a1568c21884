package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CudaConfigTest {

  @Test
  void defaultsAndKeysArePinned() {
    assertThat(CudaConfig.NAMESPACE).isEqualTo("cuda");
    assertThat(CudaConfig.KEYS).containsExactly("cuda.device", "cuda.strided-copies");
    assertThat(CudaConfig.DEFAULTS).isEqualTo(new CudaConfig(0, true));
    assertThat(CudaConfig.DEFAULTS.toProperties())
        .containsExactly(Map.entry("cuda.device", "0"), Map.entry("cuda.strided-copies", "true"));
    assertThat(CudaConfig.fromProperties(Map.of())).isEqualTo(CudaConfig.DEFAULTS);
  }

  @Test
  void everyKeyMapsToItsField() {
    CudaConfig config = CudaConfig.fromProperties(
        Map.of("cuda.device", " 3 ", "cuda.strided-copies", "FALSE", "sim.seed", "7"));
    assertThat(config).isEqualTo(new CudaConfig(3, false));
    assertThat(CudaConfig.fromProperties(config.toProperties())).isEqualTo(config);
  }

  @Test
  void unknownKeysAreRejectedListingTheKnownOnes() {
    assertThatThrownBy(() -> CudaConfig.fromProperties(Map.of("cuda.devise", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cuda.devise")
        .hasMessageContaining("cuda.device, cuda.strided-copies");
  }

  @Test
  void badValuesNameTheKeyAndTheValue() {
    for (Map.Entry<String, String> bad : List.of(Map.entry("cuda.device", "gpu0"),
        Map.entry("cuda.device", "-1"), Map.entry("cuda.strided-copies", "yes"))) {
      assertThatThrownBy(() -> CudaConfig.fromProperties(Map.ofEntries(bad)))
          .as("%s=%s", bad.getKey(), bad.getValue())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(bad.getKey() + "=" + bad.getValue());
    }
  }
}
