package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class MemoryConfigTest {

  @Test
  void pinsTheKeysAndTheDefaults() {
    assertThat(MemoryConfig.NAMESPACE).isEqualTo("memory");
    assertThat(MemoryConfig.KEYS).isEmpty();
    assertThat(MemoryConfig.fromProperties(Map.of())).isEqualTo(MemoryConfig.DEFAULTS);
    assertThat(MemoryConfig.DEFAULTS.toProperties()).isEmpty();
  }

  @Test
  void rejectsEveryKeyOfItsNamespace() {
    assertThatThrownBy(() -> MemoryConfig.fromProperties(Map.of("memory.capacity", "1GiB")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key memory.capacity")
        .hasMessageContaining("remove memory.capacity");
  }

  @Test
  void ignoresOtherNamespaces() {
    assertThat(MemoryConfig.fromProperties(Map.of("memoryx.a", "1", "file.directory", "/x")))
        .isEqualTo(MemoryConfig.DEFAULTS);
  }
}
