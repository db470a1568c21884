package io.kvtier.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.testkit.ModuleSuite;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.backend.cpu: the device and host pools, named cpu. */
class CpuModuleTest extends ModuleSuite {

  CpuModuleTest() {
    super(CpuConfig.class.getModule(), "io.kvtier.backend.cpu");
    provides(DeviceMemoryProvider.class, CpuDeviceMemoryProvider.class);
    provides(HostMemoryProvider.class, CpuHostMemoryProvider.class);
  }

  @Test
  void theEngineFindsBothProvidersByNameAndTheyShareTheCpuNamespace() {
    DeviceMemoryProvider device = Providers.named(DeviceMemoryProvider.class, "cpu");
    HostMemoryProvider host = Providers.named(HostMemoryProvider.class, "cpu");
    assertThat(device).isInstanceOf(CpuDeviceMemoryProvider.class);
    assertThat(host).isInstanceOf(CpuHostMemoryProvider.class);
    assertThat(List.<KvTierProvider>of(device, host))
        .allSatisfy(
            p -> {
              assertThat(p.availability().available()).isTrue();
              assertThat(p.availability().reason()).isNotBlank();
              assertThat(p.configNamespace()).isEqualTo("cpu");
            });
  }
}
