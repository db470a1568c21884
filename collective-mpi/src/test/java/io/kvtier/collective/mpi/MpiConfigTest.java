package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.config.ConfigAssertions;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MpiConfigTest {

  @Test
  void defaults() {
    ConfigAssertions.assertDefaults(MpiConfig.PARSER, new MpiConfig(128));
    assertThat(MpiConfig.defaults()).isEqualTo(new MpiConfig(128));
  }

  @Test
  void fullMapping() {
    Map<String, String> properties = Map.of("mpi.inline-longs", " 64 ");
    ConfigAssertions.assertFullMapping(MpiConfig.PARSER, properties, new MpiConfig(64));
    assertThat(MpiConfig.KEYS).containsExactlyInAnyOrderElementsOf(properties.keySet());
    assertThat(MpiConfig.fromProperties(new MpiConfig(64).toProperties()))
        .isEqualTo(new MpiConfig(64));
  }

  @Test
  void unknownKeyIsRejectedNamingTheClosestKnownOne() {
    assertThatThrownBy(() -> MpiConfig.fromProperties(Map.of("mpi.inline", "4")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'mpi.inline'")
        .hasMessageContaining("mpi.inline-longs");
    assertThat(MpiConfig.fromProperties(Map.of("sim.seed", "1", "mpix.a", "2")))
        .isEqualTo(MpiConfig.defaults());
  }

  @Test
  void badValuesNameTheKeyAndTheRange() {
    assertThatThrownBy(() -> MpiConfig.fromProperties(Map.of("mpi.inline-longs", "four")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("mpi.inline-longs='four' is not a whole number (from 1 to 1024)");
    assertThatThrownBy(() -> MpiConfig.fromProperties(Map.of("mpi.inline-longs", "0")))
        .hasMessageContaining("mpi.inline-longs=0 must be in [1, 1024]");
    assertThatThrownBy(() -> new MpiConfig(0))
        .hasMessageContaining("mpi.inline-longs=0 must be in [1, 1024]");
    assertThatThrownBy(() -> new MpiConfig(1025)).hasMessageContaining("mpi.inline-longs=1025");
  }
}
