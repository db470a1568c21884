package io.kvtier.testkit.conformance;

import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.Providers;

/** The host suite on the {@code sim} pool. */
class SimHostMemoryConformanceTest extends HostMemoryConformanceSuite {

  @Override
  protected HostMemoryProvider provider() {
    return Providers.named(HostMemoryProvider.class, "sim");
  }
}
