package io.kvtier.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.config.ConfigAssertions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CpuConfigTest {

  @Test
  void defaults() {
    ConfigAssertions.assertDefaults(CpuConfig.PARSER, new CpuConfig(2));
    assertThat(CpuConfig.DEFAULTS.toProperties().keySet())
        .containsExactlyElementsOf(CpuConfig.KEYS);
  }

  @Test
  void fullMapping() {
    CpuConfig expected = new CpuConfig(1);
    ConfigAssertions.assertFullMapping(
        CpuConfig.PARSER, Map.of("cpu.copy-threads", " 1 "), expected);
    assertThat(CpuConfig.fromProperties(expected.toProperties())).isEqualTo(expected);
    assertThat(CpuConfig.DEFAULTS.with(CpuConfig.COPY_THREADS, "1")).isEqualTo(expected);
  }

  @Test
  void rejectsAnUnknownKeyListingTheKnownOnes() {
    assertThatThrownBy(() -> CpuConfig.fromProperties(Map.of("cpu.copy-thread", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cpu.copy-thread")
        .hasMessageContaining("did you mean cpu.copy-threads");
  }

  @Test
  void ignoresKeysOfOtherNamespaces() {
    assertThat(CpuConfig.fromProperties(Map.of("kvtier.device", "cpu", "sim.seed", "1")))
        .isEqualTo(CpuConfig.DEFAULTS);
  }

  @ParameterizedTest
  @ValueSource(strings = {"0", "3", "-1", "two", "1.5", ""})
  void rejectsABadThreadCountNamingKeyAndValue(String value) {
    assertThatThrownBy(() -> CpuConfig.fromProperties(Map.of(CpuConfig.COPY_THREADS, value)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(CpuConfig.COPY_THREADS)
        .hasMessageContaining(value);
  }

  @Test
  void theCompactConstructorValidates() {
    assertThatThrownBy(() -> new CpuConfig(3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cpu.copy-threads=3")
        .hasMessageContaining("[1, 2]");
  }
}
