package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CudaDriverProbeTest {

  private static final PoolSpec SPEC =
      new PoolSpec(new KvLayout(2, 1, 4, 2, 4), 4, MemoryLayout.LAYER_FIRST);

  @Test
  void aMissingDriverLibraryIsUnavailableNamingItAndTheFix() {
    Availability a = CudaDriverProbe.probe("libcuda-kvtier-missing.so.1", "");
    assertThat(a.available()).isFalse();
    assertThat(a.reason())
        .startsWith("libcuda-kvtier-missing.so.1 not found")
        .contains("install the NVIDIA driver")
        .contains("kvtier.device=sim");
  }

  @Test
  void aLibraryWithoutCuInitIsNotTakenForTheDriver() {
    assumeTrue(CudaNatives.unsupportedPlatform().isEmpty(), "runs on linux-x86_64");
    Availability a = CudaDriverProbe.probe("libc.so.6", "");
    assertThat(a.available()).isFalse();
    assertThat(a.reason()).startsWith("libc.so.6 has no cuInit symbol");
  }

  @Test
  void withoutTheDriverThisMachineReportsLibcudaMissing() {
    assumeFalse(driverLoads(), "libcuda.so.1 is present here");
    for (Availability a :
        new Availability[] {
          new CudaDeviceMemoryProvider().availability(), new CudaHostMemoryProvider().availability()
        }) {
      assertThat(a.available()).isFalse();
      assertThat(a.reason()).startsWith("libcuda.so.1 not found");
    }
  }

  @Test
  void withTheDriverTheAnswerNamesTheDeviceOrTheDriversComplaint() {
    assumeTrue(driverLoads(), "libcuda.so.1 is absent here");
    Availability a = CudaDriverProbe.cached();
    System.out.println("[kvtier cuda] probe: " + a);
    if (a.available()) {
      assertThat(a.reason()).contains("(device 0 of ").contains("JCuda natives");
    } else {
      assertThat(a.reason()).doesNotStartWith("libcuda.so.1 not found");
    }
  }

  @Test
  void openWhileUnavailableFailsWithTheProbesReason() {
    Availability a = CudaDriverProbe.cached();
    assumeFalse(a.available(), "a GPU is usable here");
    assertThatThrownBy(() -> new CudaDeviceMemoryProvider().open(SPEC, BackendContext.defaults()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("the cuda device provider is unavailable: " + a.reason());
    assertThatThrownBy(() -> new CudaHostMemoryProvider().open(SPEC, BackendContext.defaults()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("the cuda host provider is unavailable: " + a.reason());
  }

  @Test
  void openRejectsAnUnknownKeyEvenWithoutAGpu() {
    BackendContext bad =
        new BackendContext(
            0,
            Map.of("cuda.no-such-key", "1"),
            BackendContext.defaults().time(),
            BackendContext.defaults().metrics());
    assertThatThrownBy(() -> new CudaDeviceMemoryProvider().open(SPEC, bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cuda.no-such-key");
  }

  @Test
  void theBuildUnpacksJCudasNativesWhereTheTestsLook() {
    String libraryPath = System.getProperty("java.library.path");
    assertThat(CudaNatives.locate(libraryPath))
        .as(
            "%s in java.library.path=%s (the pom's jcuda.version must equal %s)",
            CudaNatives.fileName(), libraryPath, CudaNatives.JCUDA_VERSION)
        .hasValueSatisfying(found -> assertThat(Path.of(found)).isRegularFile());
  }

  @Test
  void missingNativesAreReportedWithTheFix() {
    assertThat(CudaNatives.locate("/nonexistent/kvtier")).isEmpty();
    assertThat(CudaNatives.missingReason("/nonexistent/kvtier"))
        .contains("libJCudaDriver-12.6.0-linux-x86_64.so")
        .contains("java.library.path=/nonexistent/kvtier")
        .contains("-Djava.library.path=<kvtier>/backend-cuda/target/natives");
  }

  @Test
  void driverVersionsReadAsMajorDotMinor() {
    assertThat(CudaDriverProbe.formatVersion(12080)).isEqualTo("12.8");
    assertThat(CudaDriverProbe.formatVersion(12060)).isEqualTo("12.6");
    assertThat(CudaDriverProbe.formatVersion(11040)).isEqualTo("11.4");
  }

  @SuppressWarnings("restricted")
  private static boolean driverLoads() {
    try {
      SymbolLookup.libraryLookup(CudaDriverProbe.DRIVER_LIBRARY, Arena.global());
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
