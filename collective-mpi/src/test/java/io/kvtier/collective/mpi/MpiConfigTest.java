package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class MpiConfigTest {

  @Test
  void defaultsArePinned() {
    assertThat(MpiConfig.defaults()).isEqualTo(new MpiConfig(128));
    assertThat(MpiConfig.fromProperties(Map.of())).isEqualTo(MpiConfig.defaults());
    assertThat(MpiConfig.NAMESPACE).isEqualTo("mpi");
    assertThat(MpiConfig.KEYS).containsExactly("mpi.inline-longs");
  }

  @Test
  void everyKeyMapsToItsField() {
    MpiConfig config = MpiConfig.fromProperties(Map.of("mpi.inline-longs", " 64 "));
    assertThat(config.inlineLongs()).isEqualTo(64);
    assertThat(MpiConfig.fromProperties(config.toProperties())).isEqualTo(config);
  }

  @Test
  void keysOfOtherNamespacesAreIgnored() {
    assertThat(MpiConfig.fromProperties(Map.of("sim.seed", "1", "mpix.a", "2")))
        .isEqualTo(MpiConfig.defaults());
  }

  @Test
  void unknownKeyIsRejectedWithTheKnownOnes() {
    assertThatThrownBy(() -> MpiConfig.fromProperties(Map.of("mpi.inline", "4")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("mpi.inline]")
        .hasMessageContaining("mpi.inline-longs");
  }

  @Test
  void badValuesNameTheKeyAndTheRange() {
    assertThatThrownBy(() -> MpiConfig.fromProperties(Map.of("mpi.inline-longs", "four")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("mpi.inline-longs='four'");
    assertThatThrownBy(() -> new MpiConfig(0))
        .hasMessageContaining("mpi.inline-longs=0 must be in [1, 1024]");
    assertThatThrownBy(() -> new MpiConfig(1025))
        .hasMessageContaining("mpi.inline-longs=1025");
  }
}
