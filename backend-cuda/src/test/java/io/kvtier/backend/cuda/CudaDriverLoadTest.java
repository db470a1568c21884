package io.kvtier.backend.cuda;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** JCuda loads on the module path, from java.library.path, or says why it does not. */
class CudaDriverLoadTest {

  @Test
  void jcudaLoadsItsNativeLibraryOrNamesItAndTheMissingDriver() {
    if (CudaDriverProbe.cached().available()) {
      assertThatCode(CudaDriver::ensureLoaded).doesNotThrowAnyException();
      return;
    }
    assumeTrue(
        CudaDriverProbe.cached().reason().startsWith("libcuda.so.1 not found"),
        "the driver is present but the backend is unavailable for another reason");
    // Without the driver JCuda's library is found but cannot link against libcuda.so.1.
    assertThatThrownBy(CudaDriver::ensureLoaded)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("JCuda cannot load its native library " + CudaNatives.fileName())
        .hasMessageContaining("libcuda.so.1");
  }
}
