package io.kvtier.store.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.config.ConfigAssertions;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MemoryConfigTest {

  @Test
  void defaults() {
    ConfigAssertions.assertDefaults(MemoryConfig.PARSER, new MemoryConfig());
    assertThat(MemoryConfig.DEFAULTS.toProperties()).isEmpty();
  }

  @Test
  void fullMapping() {
    // The store has no keys: the empty mapping is the full one.
    ConfigAssertions.assertFullMapping(MemoryConfig.PARSER, Map.of(), MemoryConfig.DEFAULTS);
    assertThat(MemoryConfig.KEYS).isEmpty();
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
