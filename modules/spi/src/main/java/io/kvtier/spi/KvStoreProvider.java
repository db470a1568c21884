package io.kvtier.spi;

/** Provides L3 stores: {@code memory} (Caffeine), {@code file}, {@code hazelcast}. */
public interface KvStoreProvider extends KvTierProvider {

  /**
   * Opens (or connects to) a store.
   *
   * @param spec the layout, capacity and namespace
   * @param context rank, properties of the provider's namespace, time source, metrics
   * @return the store
   */
  KvStore open(KvStoreSpec spec, BackendContext context);
}
