package io.kvtier.core;

import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferEngine;
import java.util.Objects;
import java.util.Optional;

/**
 * The backends of one rank, opened from a {@link KvTierConfig} without Guice: the selected
 * providers, the device and host pools, and the transfer engine between them. {@link
 * io.kvtier.core.inject.KvTierModule} binds the same objects for Guice users.
 *
 * <p>With {@code kvtier.store} set, the L3 store of this rank is opened too (namespace: the
 * model id, {@code kvtier.l3-model-id}, with characters a store namespace may not hold replaced
 * by '_'), and {@link #l3Setup} hands it to a cache with an L3 tier.
 *
 * <p>Closing closes the store first (close the L3 executor before), then the transfer engine (it
 * waits for copies in flight), then the host pool, then the device pool. The collective is not joined here: joining needs the rank group,
 * which the rank loop sets up from {@link #providers()}.
 *
 * <pre>{@code
 * KvTierConfig config = KvTierConfig.builder().device("sim").build();
 * try (KvTierBackends backends = KvTierBackends.open(config)) {
 *   backends.device().write(0, 0, 0, segment);
 * }
 * }</pre>
 */
public final class KvTierBackends implements AutoCloseable {

  private final SelectedProviders providers;
  private final int rank;
  private final DeviceMemory device;
  private final HostMemory host;
  private final TransferEngine transfers;
  private final Optional<KvStore> store;
  private final TimeSource time;
  private boolean closed;

  private KvTierBackends(
      SelectedProviders providers,
      int rank,
      DeviceMemory device,
      HostMemory host,
      TransferEngine transfers,
      Optional<KvStore> store,
      TimeSource time) {
    this.providers = providers;
    this.rank = rank;
    this.device = device;
    this.host = host;
    this.transfers = transfers;
    this.store = store;
    this.time = time;
  }

  /**
   * Opens the backends of rank 0 on the providers of the module path, with the wall clock and no
   * metrics.
   *
   * @param config the configuration
   * @return the opened backends; close them
   * @throws io.kvtier.core.discovery.ProviderException if a provider is not found, unavailable
   *     or broken
   * @throws IllegalArgumentException for a backend property no provider reads, or a bad value
   */
  public static KvTierBackends open(KvTierConfig config) {
    return open(config, ProviderRegistries.discover(), 0, TimeSource.SYSTEM, BackendMetrics.NOOP);
  }

  /**
   * Opens the backends of one rank on the given providers.
   *
   * @param config the configuration
   * @param registries the providers to select from
   * @param rank the rank the pools serve, {@code 0 <= rank < config.ranks()}
   * @param time the time source the backends use
   * @param metrics where the backends report
   * @return the opened backends; close them
   * @throws io.kvtier.core.discovery.ProviderException if a provider is not found, unavailable
   *     or broken
   * @throws IllegalArgumentException for a backend property no provider reads, a bad value, or a
   *     rank outside the group
   */
  public static KvTierBackends open(
      KvTierConfig config,
      ProviderRegistries registries,
      int rank,
      TimeSource time,
      BackendMetrics metrics) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(registries, "registries");
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(metrics, "metrics");
    if (rank < 0 || rank >= config.ranks()) {
      throw new IllegalArgumentException(
          "rank="
              + rank
              + " is outside the group of kvtier.ranks="
              + config.ranks()
              + ": use a rank from 0 to "
              + (config.ranks() - 1));
    }
    SelectedProviders selected = SelectedProviders.select(config, registries);
    DeviceMemory device =
        selected
            .device()
            .open(config.devicePool(), selected.context(selected.device(), rank, time, metrics));
    HostMemory host = null;
    TransferEngine transfers = null;
    try {
      host =
          selected
              .host()
              .open(config.hostPool(), selected.context(selected.host(), rank, time, metrics));
      transfers = device.transferEngine(host);
      Optional<KvStore> store = Optional.empty();
      if (selected.store().isPresent()) {
        String namespace = config.l3().modelId().replaceAll("[^A-Za-z0-9._-]", "_");
        store =
            Optional.of(
                selected
                    .store()
                    .get()
                    .open(
                        new KvStoreSpec(config.layout(), config.l3().capacityBytes(), namespace),
                        selected.context(selected.store().get(), rank, time, metrics)));
      }
      return new KvTierBackends(selected, rank, device, host, transfers, store, time);
    } catch (RuntimeException | Error e) {
      // Leave nothing allocated behind a failed open: off-heap or pinned pools are large.
      closeQuietly(transfers, e);
      closeQuietly(host, e);
      closeQuietly(device, e);
      throw e;
    }
  }

  private static void closeQuietly(AutoCloseable resource, Throwable primary) {
    if (resource == null) {
      return;
    }
    try {
      resource.close();
    } catch (Exception e) {
      primary.addSuppressed(e);
    }
  }

  /**
   * The configuration the backends were opened with.
   *
   * @return the configuration
   */
  public KvTierConfig config() {
    return providers.config();
  }

  /**
   * The selected providers.
   *
   * @return the selection
   */
  public SelectedProviders providers() {
    return providers;
  }

  /**
   * The rank the pools serve.
   *
   * @return the rank
   */
  public int rank() {
    return rank;
  }

  /**
   * The device (L1) pool.
   *
   * @return the pool, valid until {@link #close()}
   */
  public DeviceMemory device() {
    return device;
  }

  /**
   * The host (L2) pool.
   *
   * @return the pool, valid until {@link #close()}
   */
  public HostMemory host() {
    return host;
  }

  /**
   * The transfer engine between the device and the host pool.
   *
   * @return the engine, valid until {@link #close()}
   */
  public TransferEngine transfers() {
    return transfers;
  }

  /**
   * The L3 store of this rank, if {@code kvtier.store} selects one.
   *
   * @return the store, valid until {@link #close()}
   */
  public Optional<KvStore> store() {
    return store;
  }

  /**
   * What a cache needs for its L3 tier: the configured settings, this rank's store, the given
   * executor, the time source the backends were opened with and this rank's place in the group.
   *
   * @param executor where the store calls run, for example {@link L3Executor#background}; the
   *     caller closes it before these backends
   * @return the setup, or empty without a store
   */
  public Optional<L3Setup> l3Setup(L3Executor executor) {
    Objects.requireNonNull(executor, "executor");
    return store.map(s -> new L3Setup(config().l3(), s, executor, time, rank, config().ranks()));
  }

  /**
   * Closes the store, the transfer engine, then the host pool, then the device pool; each is closed even
   * if an earlier one failed, and the first failure is thrown with the others suppressed.
   * Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    RuntimeException failure = null;
    for (AutoCloseable resource :
        new AutoCloseable[] {store.orElse(null), transfers, host, device}) {
      if (resource == null) {
        continue;
      }
      try {
        resource.close();
      } catch (Exception e) {
        if (failure == null) {
          failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
