package io.kvtier.store.memory;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.ProviderName;
import io.kvtier.testkit.conformance.KvStoreCapability;
import io.kvtier.testkit.conformance.KvStoreConformanceSuite;
import io.kvtier.testkit.conformance.KvStoreDamage;
import java.util.EnumSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;

/**
 * The store suite on the {@code memory} store: neither persistent nor shared; damageable by a
 * flipped bit (its checksum) or a removed page, not by truncation (a stored page is a segment of
 * a fixed size).
 */
class MemoryKvStoreConformanceTest extends KvStoreConformanceSuite {

  private MemoryKvStore opened;

  @Override
  protected KvStoreProvider provider() {
    return new Capturing();
  }

  /** The {@code memory} provider, remembering the store it opened last, for {@link #damage}. */
  @ProviderName("memory")
  private final class Capturing implements KvStoreProvider {
    private final KvStoreProvider real = Providers.named(KvStoreProvider.class, "memory");

    @Override
    public String name() {
      return real.name();
    }

    @Override
    public Availability availability() {
      return real.availability();
    }

    @Override
    public String configNamespace() {
      return real.configNamespace();
    }

    @Override
    public KvStore open(KvStoreSpec spec, BackendContext context) {
      opened = (MemoryKvStore) real.open(spec, context);
      return opened;
    }
  }

  @Override
  protected Set<KvStoreCapability> capabilities() {
    return EnumSet.of(KvStoreCapability.DAMAGEABLE);
  }

  @Override
  protected void damage(
      KvStoreSpec spec, BackendContext context, PageKey key, KvStoreDamage damage, Random random) {
    switch (damage) {
      case FLIPPED_BIT -> {
        if (!opened.flipStoredBit(key, random.nextLong())) {
          throw new IllegalStateException("the store does not hold " + key);
        }
      }
      case REMOVED -> opened.cache().invalidate(key);
      case TRUNCATED, EMPTIED ->
          Assumptions.abort("a memory page is a segment of a fixed size: it cannot be " + damage);
    }
  }
}
