/**
 * The kvtier engine: the paged radix tree, the device and host tiers, the controller, the rank
 * protocol, provider discovery and Guice wiring. Backends are found through the SPI with
 * {@link java.util.ServiceLoader}; the engine never names a backend class.
 */
module io.kvtier.core {
  requires transitive io.kvtier.spi;
  requires static com.google.guice;
  requires static jakarta.inject;
  requires java.logging;

  exports io.kvtier.core;
  exports io.kvtier.core.config;
  exports io.kvtier.core.discovery;
  exports io.kvtier.core.inject;
  exports io.kvtier.core.cache;
  exports io.kvtier.core.rank;
  exports io.kvtier.core.tenant;
  exports io.kvtier.core.cache.testing to
      io.kvtier.simulator,
      io.kvtier.cli;

  // Guice reflects on the injected module's members.
  opens io.kvtier.core.inject to
      com.google.guice;

  uses io.kvtier.spi.DeviceMemoryProvider;
  uses io.kvtier.spi.HostMemoryProvider;
  uses io.kvtier.spi.CollectiveProvider;
  uses io.kvtier.spi.KvStoreProvider;
}
