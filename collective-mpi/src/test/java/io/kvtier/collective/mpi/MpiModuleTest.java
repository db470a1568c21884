package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.testkit.ModuleDescriptors;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MpiModuleTest {

  private static final Module MODULE = MpiCollectiveProvider.class.getModule();

  @Test
  void providesMatchTheServiceFiles() {
    ModuleDescriptors.assertProvidesMatchServiceFiles(MODULE);
    assertThat(ModuleDescriptors.descriptorOf(MODULE).provides()).singleElement()
        .satisfies(p -> {
          assertThat(p.service()).isEqualTo(CollectiveProvider.class.getName());
          assertThat(p.providers()).containsExactly(MpiCollectiveProvider.class.getName());
        });
  }

  @Test
  void exportsOnlyTheProviderPackage() {
    ModuleDescriptors.assertExports(MODULE, Set.of("io.kvtier.collective.mpi"), Map.of());
    assertThat(ModuleDescriptors.descriptorOf(MODULE).packages())
        .contains("io.kvtier.collective.mpi.internal");
  }

  @Test
  void providerIsNamedAsAnnotated() {
    ModuleDescriptors.assertProviderNames(MODULE);
    MpiCollectiveProvider provider = new MpiCollectiveProvider();
    assertThat(provider.name()).isEqualTo("mpi");
    assertThat(provider.configNamespace()).isEqualTo(MpiConfig.NAMESPACE);
  }

  @Test
  void availabilityNeverThrowsAndGivesAReason() {
    var availability = new MpiCollectiveProvider().availability();
    assertThat(availability.reason()).isNotBlank();
    if (availability.available()) {
      assertThat(availability.reason()).contains("Open MPI").contains("libmpi");
    } else {
      assertThat(availability.reason()).contains("apt-get install openmpi-bin libopenmpi-dev");
    }
  }
}
