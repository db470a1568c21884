package io.kvtier.core.discovery;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;

/**
 * The registries of the four SPIs, found together.
 *
 * @param device device pool providers
 * @param host host pool providers
 * @param collective rank group providers
 * @param store L3 store providers
 */
public record ProviderRegistries(
    ProviderRegistry<DeviceMemoryProvider> device,
    ProviderRegistry<HostMemoryProvider> host,
    ProviderRegistry<CollectiveProvider> collective,
    ProviderRegistry<KvStoreProvider> store) {

  /** Validates the fields. */
  public ProviderRegistries {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(collective, "collective");
    Objects.requireNonNull(store, "store");
  }

  /**
   * The providers on the module path, found with {@link java.util.ServiceLoader#stream()} and
   * none instantiated.
   *
   * @return the registries
   * @throws ProviderConflictException if two providers of one SPI share a name
   * @throws ProviderDeclarationException if a provider class lacks its {@code @ProviderName}
   */
  public static ProviderRegistries discover() {
    return new ProviderRegistries(
        ProviderRegistry.load(DeviceMemoryProvider.class),
        ProviderRegistry.load(HostMemoryProvider.class),
        ProviderRegistry.load(CollectiveProvider.class),
        ProviderRegistry.load(KvStoreProvider.class));
  }

  /**
   * The registry of one kind.
   *
   * @param kind the kind
   * @return its registry
   */
  public ProviderRegistry<?> registry(ProviderKind kind) {
    return switch (Objects.requireNonNull(kind, "kind")) {
      case DEVICE -> device;
      case HOST -> host;
      case COLLECTIVE -> collective;
      case STORE -> store;
    };
  }

  /**
   * The configuration namespaces of every provider found, of all kinds; see {@link
   * ProviderRegistry#namespaces()}.
   *
   * @return the namespaces
   */
  public Set<String> namespaces() {
    Set<String> all = new LinkedHashSet<>();
    for (ProviderKind kind : ProviderKind.values()) {
      all.addAll(registry(kind).namespaces());
    }
    return all;
  }
}
