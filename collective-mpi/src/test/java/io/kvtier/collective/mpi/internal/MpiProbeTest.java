package io.kvtier.collective.mpi.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MpiProbeTest {

  @Test
  void missingLibraryIsUnavailableWithThePackagesToInstall() {
    MpiProbe probe = MpiProbe.probe(List.of("libkvtier-no-such-mpi.so.40"), Map.of());
    assertThat(probe.library()).isEmpty();
    assertThat(probe.availability().available()).isFalse();
    assertThat(probe.availability().reason())
        .contains("libkvtier-no-such-mpi.so.40")
        .contains("apt-get install openmpi-bin libopenmpi-dev")
        .contains("LD_LIBRARY_PATH");
  }

  @Test
  void aLibraryWithoutOpenMpiSymbolsIsAnAbiMismatch() {
    // libc is on every Linux machine and has none of Open MPI's symbols.
    MpiProbe probe = MpiProbe.probe(List.of("libc.so.6"), Map.of());
    assertThat(probe.availability().available()).isFalse();
    assertThat(probe.availability().reason())
        .contains("libc.so.6 has no symbol ompi_mpi_comm_world")
        .contains("MPICH");
  }

  @Test
  void launchIsReadFromOpenMpisVariables() {
    MpiLaunch launched =
        MpiLaunch.from(Map.of("OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_RANK", "2"));
    assertThat(launched.launched()).isTrue();
    assertThat(launched.describe()).isEqualTo("started by mpirun as rank 2 of 4");
    MpiLaunch pmix = MpiLaunch.from(Map.of("PMIX_RANK", "3"));
    assertThat(pmix.launched()).isTrue();
    assertThat(pmix.describe()).isEqualTo("started by mpirun as rank 3 of ?");
    MpiLaunch alone = MpiLaunch.from(Map.of("PATH", "/usr/bin"));
    assertThat(alone.launched()).isFalse();
    assertThat(alone.describe()).contains("single rank").contains("mpirun -np N");
  }
}
