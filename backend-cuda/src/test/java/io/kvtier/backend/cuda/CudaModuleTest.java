package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.ModuleDescriptors;
import java.lang.module.ModuleDescriptor;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class CudaModuleTest {

  private static final Module MODULE = CudaConfig.class.getModule();

  @Test
  void providesAgreeWithTheServiceFilesAndProvidersAreNamedCuda() {
    ModuleDescriptors.assertProvidesMatchServiceFiles(MODULE);
    ModuleDescriptors.assertProviderNames(MODULE);
    assertThat(ModuleDescriptors.descriptorOf(MODULE).provides())
        .extracting(ModuleDescriptor.Provides::service)
        .containsExactlyInAnyOrder(DeviceMemoryProvider.class.getName(),
            HostMemoryProvider.class.getName());
  }

  @Test
  void exportsOnlyItsApiPackage() {
    ModuleDescriptors.assertExports(MODULE, Set.of("io.kvtier.backend.cuda"));
  }

  @Test
  void requiresJCudaAndWhatJCudaCannotDeclare() {
    Set<String> requires = ModuleDescriptors.descriptorOf(MODULE).requires().stream()
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
