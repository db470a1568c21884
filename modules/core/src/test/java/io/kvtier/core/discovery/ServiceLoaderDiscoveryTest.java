package io.kvtier.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.DeviceMemoryProvider;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Discovery through the real {@link java.util.ServiceLoader}, with backend-sim on the path. */
class ServiceLoaderDiscoveryTest {

  @Test
  void findsTheSimulatedBackendsByTheirAnnotations() {
    ProviderRegistries registries = ProviderRegistries.discover();

    assertThat(registries.device().names()).contains("sim");
    assertThat(registries.host().names()).contains("sim");
    assertThat(registries.collective().names()).contains("local");
    for (ProviderKind kind : ProviderKind.values()) {
      assertThat(registries.registry(kind).spi()).isEqualTo(kind.spi());
    }
  }

  @Test
  void theSimulatedBackendsAreAvailableAndLiveInTheirModule() {
    ProviderRegistries registries = ProviderRegistries.discover();

    assertThat(registries.device().reports())
        .filteredOn(r -> r.name().equals("sim"))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.available()).isTrue();
              assertThat(r.module()).isEqualTo("io.kvtier.backend.sim");
              assertThat(r.spi()).isEqualTo(DeviceMemoryProvider.class.getName());
            });
    assertThat(registries.collective().reports())
        .filteredOn(r -> r.name().equals("local"))
        .singleElement()
        .satisfies(r -> assertThat(r.available()).isTrue());
  }

  @Test
  void autoPicksSimWhenNoGpuProviderIsOnTheModulePath() {
    ProviderRegistries registries = ProviderRegistries.discover();
    // cuda is not a dependency of core, so the default order falls through to sim.
    assertThat(registries.device().names()).doesNotContain("cuda");

    DeviceMemoryProvider chosen =
        registries.device().select("auto", ProviderKind.DEVICE.defaultAutoOrder());

    assertThat(chosen.name()).isEqualTo("sim");
    assertThat(registries.collective().select("auto", List.of("mpi", "local")).name())
        .isEqualTo("local");
  }

  @Test
  void askingForAMissingBackendSaysWhichModuleToAdd() {
    ProviderRegistries registries = ProviderRegistries.discover();

    assertThatThrownBy(() -> registries.device().get("cuda"))
        .isInstanceOf(ProviderNotFoundException.class)
        .hasMessageContaining("kvtier-backend-cuda")
        .hasMessageContaining("sim (available");
  }
}
