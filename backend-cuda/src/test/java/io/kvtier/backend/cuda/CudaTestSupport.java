package io.kvtier.backend.cuda;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.spi.Availability;

/** The gate of the tests that need a GPU. */
final class CudaTestSupport {

  /** Set to true (device-check.sh does) to make a missing GPU fail the GPU tests. */
  static final String REQUIRED = "kvtier.cuda.required";

  private CudaTestSupport() {}

  /**
   * Skips the running test, printing why, unless the cuda backend is available; fails instead
   * when {@value #REQUIRED} is true.
   */
  static void requireCuda() {
    Availability availability = CudaDriverProbe.cached();
    if (availability.available()) {
      return;
    }
    if (Boolean.getBoolean(REQUIRED)) {
      fail("-D" + REQUIRED + "=true but the cuda backend is unavailable: " + availability.reason());
    }
    System.out.println("[kvtier cuda] skipped: " + availability.reason());
    assumeTrue(false, availability.reason());
  }
}
