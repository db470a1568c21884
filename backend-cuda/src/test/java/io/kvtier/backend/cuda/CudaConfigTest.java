package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.config.ConfigAssertions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CudaConfigTest {

  @Test
  void defaults() {
    ConfigAssertions.assertDefaults(CudaConfig.PARSER, new CudaConfig(0, true));
    assertThat(CudaConfig.DEFAULTS).isEqualTo(new CudaConfig(0, true));
  }

  @Test
  void fullMapping() {
    Map<String, String> properties = new LinkedHashMap<>();
    properties.put("cuda.device", " 3 ");
    properties.put("cuda.strided-copies", "FALSE");
    ConfigAssertions.assertFullMapping(CudaConfig.PARSER, properties, new CudaConfig(3, false));
    assertThat(CudaConfig.KEYS).containsExactlyElementsOf(properties.keySet());
    CudaConfig config = new CudaConfig(3, false);
    assertThat(CudaConfig.fromProperties(config.toProperties())).isEqualTo(config);
  }

  @Test
  void unknownKeysAreRejectedNamingTheClosestKnownOne() {
    assertThatThrownBy(() -> CudaConfig.fromProperties(Map.of("cuda.devise", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'cuda.devise': did you mean cuda.device?")
        .hasMessageContaining("cuda.device, cuda.strided-copies");
    assertThat(CudaConfig.fromProperties(Map.of("sim.seed", "7"))).isEqualTo(CudaConfig.DEFAULTS);
  }

  @Test
  void badValuesNameTheKeyAndTheValue() {
    for (Map.Entry<String, String> bad :
        List.of(
            Map.entry("cuda.device", "gpu0"),
            Map.entry("cuda.device", "-1"),
            Map.entry("cuda.strided-copies", "yes"))) {
      assertThatThrownBy(() -> CudaConfig.fromProperties(Map.ofEntries(bad)))
          .as("%s=%s", bad.getKey(), bad.getValue())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageMatching(bad.getKey() + "='?" + bad.getValue() + "'? .*");
    }
  }
}
