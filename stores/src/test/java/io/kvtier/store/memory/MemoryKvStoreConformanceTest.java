package io.kvtier.store.memory;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.testkit.conformance.KvStoreConformanceSuite;

/** The store suite on the {@code memory} store: neither persistent nor shared nor damageable. */
class MemoryKvStoreConformanceTest extends KvStoreConformanceSuite {

  @Override
  protected KvStoreProvider provider() {
    return Providers.named(KvStoreProvider.class, "memory");
  }
}
