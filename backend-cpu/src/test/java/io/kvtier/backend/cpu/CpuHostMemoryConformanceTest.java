package io.kvtier.backend.cpu;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.HostMemoryConformanceSuite;

/** The host suite on the {@code cpu} pool. */
class CpuHostMemoryConformanceTest extends HostMemoryConformanceSuite {

  @Override
  protected HostMemoryProvider provider() {
    return Providers.named(HostMemoryProvider.class, "cpu");
  }
}
