package io.kvtier.spi;

/** Provides the host (L2) page pool: {@code sim} (off-heap), {@code cuda} (pinned). */
public interface HostMemoryProvider extends KvTierProvider {

  /**
   * Allocates a host page pool.
   *
   * @param spec the pool's shape
   * @param context rank, properties of the provider's namespace, time source, metrics
   * @return the pool, zero-filled
   * @throws IllegalArgumentException for a bad property value, naming the key and the value
   * @throws IllegalStateException if the provider is not {@link #availability() available}
   */
  HostMemory open(PoolSpec spec, BackendContext context);
}
