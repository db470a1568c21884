package io.kvtier.backend.sim;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.HostMemoryConformanceSuite;

/** The host suite on the {@code sim} pool. */
class SimHostMemoryConformanceTest extends HostMemoryConformanceSuite {

  @Override
  protected HostMemoryProvider provider() {
    return Providers.named(HostMemoryProvider.class, "sim");
  }
}
