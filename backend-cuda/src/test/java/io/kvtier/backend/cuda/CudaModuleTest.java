package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.ModuleSuite;
import java.lang.module.ModuleDescriptor;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.backend.cuda: the device and host pools, named cuda. */
class CudaModuleTest extends ModuleSuite {

  CudaModuleTest() {
    super(CudaConfig.class.getModule(), "io.kvtier.backend.cuda");
    provides(DeviceMemoryProvider.class, CudaDeviceMemoryProvider.class);
    provides(HostMemoryProvider.class, CudaHostMemoryProvider.class);
  }

  @Test
  void requiresJCudaAndWhatJCudaCannotDeclare() {
    Set<String> requires =
        module().getDescriptor().requires().stream()
            .map(ModuleDescriptor.Requires::name)
            .collect(Collectors.toSet());
    assertThat(requires).contains("io.kvtier.spi", "jcuda", "java.logging");
  }

  @Test
  void theEngineFindsBothProvidersByNameAndTheyShareTheCudaNamespace() {
    DeviceMemoryProvider device = Providers.named(DeviceMemoryProvider.class, "cuda");
    HostMemoryProvider host = Providers.named(HostMemoryProvider.class, "cuda");
    assertThat(device).isInstanceOf(CudaDeviceMemoryProvider.class);
    assertThat(host).isInstanceOf(CudaHostMemoryProvider.class);
    assertThat(device.configNamespace()).isEqualTo("cuda");
    assertThat(host.configNamespace()).isEqualTo("cuda");
  }
}
