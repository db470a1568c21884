package io.kvtier.backend.sim;

import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.HostMemoryConformanceSuite;

/** The host suite on the {@code asserting} provider over {@code sim}. */
class AssertingHostMemoryConformanceTest extends HostMemoryConformanceSuite {

  @Override
  protected HostMemoryProvider provider() {
    return new AssertingHostMemoryProvider();
  }
}
