package io.kvtier.core.inject;

import com.google.inject.AbstractModule;
import com.google.inject.Provides;
import com.google.inject.Singleton;
import io.kvtier.core.KvTierBackends;
import io.kvtier.core.SelectedProviders;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferEngine;
import java.util.Objects;
import java.util.Optional;

/**
 * Guice wiring of one rank's engine from a {@link KvTierConfig}. Binds the configuration, the
 * {@link CacheConfig}, the {@link KvLayout}, the selected providers, and, as singletons, the
 * opened {@link KvTierBackends} with its device pool, host pool and transfer engine.
 *
 * <p>The objects are those of {@link KvTierBackends#open}: Guice adds nothing a plain caller
 * cannot get. The injector does not close them: get {@link KvTierBackends} from it and close that.
 * {@link TimeSource} ({@link TimeSource#SYSTEM}) and {@link BackendMetrics} ({@link
 * BackendMetrics#NOOP}) are bound here so that {@code Modules.override} can replace them.
 *
 * <p>Guice is an optional dependency of {@code io.kvtier.core} ({@code requires static}): only
 * users of this class need it on the module path.
 */
// "exports": AbstractModule comes from Guice, which core requires statically on purpose; a Guice
// user has Guice on the module path anyway.
@SuppressWarnings("exports")
public final class KvTierModule extends AbstractModule {

  private final KvTierConfig config;
  private final Optional<ProviderRegistries> registries;
  private final int rank;

  /**
   * Wires rank 0 on the providers of the module path.
   *
   * @param config the configuration
   */
  public KvTierModule(KvTierConfig config) {
    this(config, Optional.empty(), 0);
  }

  /**
   * Wires one rank on the given providers.
   *
   * @param config the configuration
   * @param registries the providers to select from
   * @param rank the rank the pools serve
   */
  public KvTierModule(KvTierConfig config, ProviderRegistries registries, int rank) {
    this(config, Optional.of(Objects.requireNonNull(registries, "registries")), rank);
  }

  private KvTierModule(KvTierConfig config, Optional<ProviderRegistries> registries, int rank) {
    this.config = Objects.requireNonNull(config, "config");
    this.registries = registries;
    if (rank < 0 || rank >= config.ranks()) {
      throw new IllegalArgumentException(
          "rank=" + rank + " is outside the group of kvtier.ranks=" + config.ranks());
    }
    this.rank = rank;
  }

  @Override
  protected void configure() {
    bind(KvTierConfig.class).toInstance(config);
    bind(CacheConfig.class).toInstance(config.cache());
    bind(KvLayout.class).toInstance(config.layout());
    bind(TimeSource.class).toInstance(TimeSource.SYSTEM);
    bind(BackendMetrics.class).toInstance(BackendMetrics.NOOP);
    // The engine's objects (the radix cache of io.kvtier.core.cache, the controller, the rank
    // protocol) are bound here, from CacheConfig and KvTierBackends, once they exist.
  }

  @Provides
  @Singleton
  ProviderRegistries registries() {
    // Discovered on first use, so that building a module (for example to override it) does not
    // scan the module path.
    return registries.orElseGet(ProviderRegistries::discover);
  }

  @Provides
  @Singleton
  KvTierBackends backends(
      KvTierConfig config, ProviderRegistries registries, TimeSource time, BackendMetrics metrics) {
    return KvTierBackends.open(config, registries, rank, time, metrics);
  }

  @Provides
  SelectedProviders selectedProviders(KvTierBackends backends) {
    return backends.providers();
  }

  @Provides
  DeviceMemoryProvider deviceProvider(KvTierBackends backends) {
    return backends.providers().device();
  }

  @Provides
  HostMemoryProvider hostProvider(KvTierBackends backends) {
    return backends.providers().host();
  }

  @Provides
  CollectiveProvider collectiveProvider(KvTierBackends backends) {
    return backends.providers().collective();
  }

  @Provides
  Optional<KvStoreProvider> storeProvider(KvTierBackends backends) {
    return backends.providers().store();
  }

  @Provides
  DeviceMemory device(KvTierBackends backends) {
    return backends.device();
  }

  @Provides
  HostMemory host(KvTierBackends backends) {
    return backends.host();
  }

  @Provides
  TransferEngine transfers(KvTierBackends backends) {
    return backends.transfers();
  }
}
