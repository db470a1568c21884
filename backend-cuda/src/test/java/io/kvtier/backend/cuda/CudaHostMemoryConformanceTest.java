package io.kvtier.backend.cuda;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.HostMemoryConformanceSuite;
import org.junit.jupiter.api.BeforeEach;

/** The host suite on the pinned {@code cuda} pool. */
class CudaHostMemoryConformanceTest extends HostMemoryConformanceSuite {

  @Override
  protected HostMemoryProvider provider() {
    return Providers.named(HostMemoryProvider.class, "cuda");
  }

  @BeforeEach
  @Override
  public void requireAvailableProvider() {
    CudaTestSupport.requireCuda();
    super.requireAvailableProvider();
  }
}
