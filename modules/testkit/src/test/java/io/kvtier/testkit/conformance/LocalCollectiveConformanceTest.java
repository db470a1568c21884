package io.kvtier.testkit.conformance;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.testkit.Providers;

/** The collective suite on the {@code local} collective (ranks as threads). */
class LocalCollectiveConformanceTest extends CollectiveConformanceSuite {

  @Override
  protected CollectiveProvider provider() {
    return Providers.named(CollectiveProvider.class, "local");
  }
}
