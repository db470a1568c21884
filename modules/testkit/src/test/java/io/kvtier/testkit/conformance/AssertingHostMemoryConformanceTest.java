package io.kvtier.testkit.conformance;

import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.asserting.AssertingHostMemoryProvider;

/** The host suite on the {@code asserting} provider over {@code sim}. */
class AssertingHostMemoryConformanceTest extends HostMemoryConformanceSuite {

  @Override
  protected HostMemoryProvider provider() {
    return new AssertingHostMemoryProvider();
  }
}
