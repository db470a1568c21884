package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.testkit.ModuleSuite;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.backend.sim: three providers in the {@code sim} namespace. */
class SimModuleTest extends ModuleSuite {

  SimModuleTest() {
    super(SimConfig.class.getModule(), "io.kvtier.backend.sim");
    provides(DeviceMemoryProvider.class, SimDeviceMemoryProvider.class);
    provides(HostMemoryProvider.class, SimHostMemoryProvider.class);
    provides(CollectiveProvider.class, LocalCollectiveProvider.class);
  }

  @Test
  void providersAreAvailableAndShareTheSimNamespace() {
    List<KvTierProvider> providers =
        List.of(
            new SimDeviceMemoryProvider(),
            new SimHostMemoryProvider(),
            new LocalCollectiveProvider());
    assertThat(providers).extracting(KvTierProvider::name).containsExactly("sim", "sim", "local");
    assertThat(providers)
        .allSatisfy(
            p -> {
              assertThat(p.availability().available()).isTrue();
              assertThat(p.availability().reason()).isNotBlank();
              assertThat(p.configNamespace()).isEqualTo("sim");
            });
  }
}
