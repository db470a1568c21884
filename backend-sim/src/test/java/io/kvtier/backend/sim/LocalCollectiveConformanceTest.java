package io.kvtier.backend.sim;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.testkit.conformance.CollectiveConformanceSuite;

/** The collective suite on the {@code local} collective (ranks as threads). */
class LocalCollectiveConformanceTest extends CollectiveConformanceSuite {

  @Override
  protected CollectiveProvider provider() {
    return Providers.named(CollectiveProvider.class, "local");
  }
}
