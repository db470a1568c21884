package io.kvtier.store.memory;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code memory} store: pages copied into off-heap memory of this JVM and kept by a Caffeine
 * cache whose weight is bytes, so that at most {@code capacityBytes} of page data stay stored.
 * Each {@link #open} is a separate, empty store; it is neither persistent nor shared between
 * ranks (sharded KV, whose keys differ per rank, needs neither). Each page carries a CRC32C of its
 * bytes, checked at every read: a page damaged at rest is a counted corrupt miss, never data.
 */
@ProviderName("memory")
public final class MemoryKvStoreProvider implements KvStoreProvider {

  /** Creates the provider; does no work. */
  public MemoryKvStoreProvider() {}

  @Override
  public String name() {
    return "memory";
  }

  /**
   * Always available: the store needs nothing but the JVM.
   *
   * @return available
   */
  @Override
  public Availability availability() {
    return Availability.available("off-heap pages in this JVM, bounded by bytes (Caffeine)");
  }

  @Override
  public String configNamespace() {
    return MemoryConfig.NAMESPACE;
  }

  /**
   * Opens an empty store.
   *
   * @throws IllegalArgumentException for a {@code memory.*} property, or a page larger than
   *     {@link Integer#MAX_VALUE} bytes
   */
  @Override
  public KvStore open(KvStoreSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    MemoryConfig.fromProperties(context.properties());
    return new MemoryKvStore(spec, context.metrics());
  }
}
