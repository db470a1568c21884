package io.kvtier.backend.cuda;

import io.kvtier.spi.Availability;
import java.util.Arrays;

/**
 * Prints what the {@code cuda} providers' availability probe finds, without loading JCuda:
 *
 * <pre>{@code
 * java --module-path ... \
 *   -m io.kvtier.backend.cuda/io.kvtier.backend.cuda.CudaDiagnostics [--require]
 * }</pre>
 *
 * <p>With {@code --require} it exits with status 1 when the backend is unavailable.
 */
public final class CudaDiagnostics {

  private CudaDiagnostics() {}

  /**
   * Runs the probe and prints its answer.
   *
   * @param args {@code --require} to fail when unavailable
   */
  public static void main(String[] args) {
    Availability availability = new CudaDeviceMemoryProvider().availability();
    System.out.println(
        "cuda: "
            + (availability.available() ? "available" : "unavailable")
            + ": "
            + availability.reason());
    System.out.println("java.library.path=" + System.getProperty("java.library.path"));
    if (Arrays.asList(args).contains("--require") && !availability.available()) {
      System.exit(1);
    }
  }
}
