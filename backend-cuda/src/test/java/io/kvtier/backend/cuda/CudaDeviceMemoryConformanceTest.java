package io.kvtier.backend.cuda;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import org.junit.jupiter.api.BeforeEach;

/** The device suite on the {@code cuda} pools, found by name as an engine finds them. */
class CudaDeviceMemoryConformanceTest extends DeviceMemoryConformanceSuite {

  @Override
  protected DeviceMemoryProvider deviceProvider() {
    return Providers.named(DeviceMemoryProvider.class, "cuda");
  }

  @Override
  protected HostMemoryProvider hostProvider() {
    return Providers.named(HostMemoryProvider.class, "cuda");
  }

  @BeforeEach
  @Override
  public void requireAvailableProviders() {
    CudaTestSupport.requireCuda();
    super.requireAvailableProviders();
  }
}
