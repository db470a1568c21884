package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.testkit.ModuleSuite;
import org.junit.jupiter.api.Test;

/** The descriptor of io.kvtier.collective.mpi: one provider, one package, internals kept in. */
class MpiModuleTest extends ModuleSuite {

  MpiModuleTest() {
    super(MpiCollectiveProvider.class.getModule(), "io.kvtier.collective.mpi");
    provides(CollectiveProvider.class, MpiCollectiveProvider.class);
  }

  @Test
  void keepsItsInternalsUnexportedAndNamesItsNamespace() {
    assertThat(module().getDescriptor().packages()).contains("io.kvtier.collective.mpi.internal");
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
