package io.kvtier.backend.cuda;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.TimeSource;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;

/** The device suite on the {@code cuda} pools with strided copies off: contiguous runs only. */
class CudaContiguousCopiesConformanceTest extends DeviceMemoryConformanceSuite {

  @Override
  protected DeviceMemoryProvider deviceProvider() {
    return new CudaDeviceMemoryProvider();
  }

  @Override
  protected HostMemoryProvider hostProvider() {
    return new CudaHostMemoryProvider();
  }

  @Override
  protected BackendContext context() {
    return new BackendContext(
        0, Map.of(CudaConfig.STRIDED_COPIES, "false"), TimeSource.SYSTEM, BackendMetrics.NOOP);
  }

  @BeforeEach
  @Override
  public void requireAvailableProviders() {
    CudaTestSupport.requireCuda();
    super.requireAvailableProviders();
  }
}
