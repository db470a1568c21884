package io.kvtier.spi;

/** Provides the device (L1) page pool: {@code sim} (off-heap simulation), {@code cuda}. */
public interface DeviceMemoryProvider extends KvTierProvider {

  /**
   * Allocates a device page pool.
   *
   * @param spec the pool's shape
   * @param context rank, properties of the provider's namespace, time source, metrics
   * @return the pool, zero-filled
   * @throws IllegalArgumentException for a bad property value, naming the key and the value
   * @throws IllegalStateException if the provider is not {@link #availability() available}
   */
  DeviceMemory open(PoolSpec spec, BackendContext context);
}
