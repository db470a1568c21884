package io.kvtier.core;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.core.discovery.ProviderRegistry;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.TimeSource;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The providers a configuration selects, one per kind (none for an unset L3 store), with the
 * backend properties each one reads.
 *
 * @param device the device pool provider
 * @param host the host pool provider
 * @param collective the rank group provider
 * @param store the L3 store provider, or empty for none
 * @param config the configuration they were selected by
 */
public record SelectedProviders(
    DeviceMemoryProvider device,
    HostMemoryProvider host,
    CollectiveProvider collective,
    Optional<KvStoreProvider> store,
    KvTierConfig config) {

  /** Validates the fields. */
  public SelectedProviders {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(collective, "collective");
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(config, "config");
  }

  /**
   * Selects the providers of {@code config} and checks that every backend property belongs to a
   * namespace that some provider found reads. Only the selected providers are instantiated
   * (and, for {@code auto}, those tried before them), unless a backend property's namespace is
   * not one of theirs: then every provider that declares its own namespace is asked.
   *
   * @param config the configuration
   * @param registries the providers found
   * @return the selection
   * @throws io.kvtier.core.discovery.ProviderException if a provider is not found, unavailable
   *     or broken
   * @throws IllegalArgumentException if a backend property's namespace belongs to no provider
   */
  public static SelectedProviders select(KvTierConfig config, ProviderRegistries registries) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(registries, "registries");
    DeviceMemoryProvider device = required(config, registries.device(), ProviderKind.DEVICE);
    HostMemoryProvider host = required(config, registries.host(), ProviderKind.HOST);
    CollectiveProvider collective =
        required(config, registries.collective(), ProviderKind.COLLECTIVE);
    String storeChoice = config.provider(ProviderKind.STORE);
    Optional<KvStoreProvider> store =
        switch (storeChoice) {
          case "none" -> Optional.empty();
          case "auto" -> registries.store().auto(config.autoOrder(ProviderKind.STORE));
          default -> Optional.of(registries.store().get(storeChoice));
        };
    SelectedProviders selected = new SelectedProviders(device, host, collective, store, config);
    selected.checkNamespaces(registries);
    return selected;
  }

  private static <P extends KvTierProvider> P required(
      KvTierConfig config, ProviderRegistry<P> registry, ProviderKind kind) {
    return registry.select(config.provider(kind), config.autoOrder(kind));
  }

  private void checkNamespaces(ProviderRegistries registries) {
    Set<String> read = new LinkedHashSet<>();
    read.add(device.configNamespace());
    read.add(host.configNamespace());
    read.add(collective.configNamespace());
    store.ifPresent(s -> read.add(s.configNamespace()));
    Set<String> everyone = null;
    for (String key : config.backendProperties().keySet()) {
      String namespace = key.substring(0, key.indexOf('.'));
      // kvtier.events.* belong to the KV event publisher (modules/events), which checks them.
      if (read.contains(namespace) || key.startsWith(KvTierKeys.EVENTS_PREFIX)) {
        continue;
      }
      if (everyone == null) {
        // Only now: asking every provider may instantiate those that override their namespace.
        everyone = new TreeSet<>(registries.namespaces());
      }
      if (!everyone.contains(namespace)) {
        throw new IllegalArgumentException(
            "backend property '"
                + key
                + "' is in namespace '"
                + namespace
                + "', which no"
                + " provider on the module path reads (namespaces found: "
                + String.join(", ", everyone)
                + "): fix the key, or put the module whose"
                + " providers read "
                + namespace
                + ".* on the module path");
      }
    }
  }

  /**
   * The context for one provider: the rank, the backend properties of the provider's
   * namespace, the time source and the metrics.
   *
   * @param provider one of the selected providers
   * @param rank the rank served
   * @param time the time source
   * @param metrics where the backend reports
   * @return the context
   */
  public BackendContext context(
      KvTierProvider provider, int rank, TimeSource time, BackendMetrics metrics) {
    Objects.requireNonNull(provider, "provider");
    Map<String, String> properties = config.propertiesFor(provider.configNamespace());
    return new BackendContext(rank, properties, time, metrics);
  }
}
