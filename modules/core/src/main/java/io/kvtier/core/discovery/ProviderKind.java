package io.kvtier.core.discovery;

import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvTierProvider;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The four SPIs the engine selects a provider for, with their configuration key, the order that
 * {@code auto} tries, and the modules known to provide each name (for "how to fix" messages).
 */
public enum ProviderKind {
  /** The device (L1) page pool. */
  DEVICE(
      "device",
      DeviceMemoryProvider.class,
      List.of("cuda", "sim"),
      Map.of("cuda", "kvtier-backend-cuda", "sim", "kvtier-backend-sim")),
  /** The host (L2) page pool. */
  HOST(
      "host",
      HostMemoryProvider.class,
      List.of("cuda", "sim"),
      Map.of("cuda", "kvtier-backend-cuda", "sim", "kvtier-backend-sim")),
  /** The rank group. */
  COLLECTIVE(
      "collective",
      CollectiveProvider.class,
      List.of("mpi", "hazelcast", "local"),
      Map.of(
          "mpi", "kvtier-collective-mpi",
          "hazelcast", "kvtier-collective-hazelcast",
          "local", "kvtier-backend-sim")),
  /** The L3 page store; optional, {@code none} by default. */
  STORE(
      "store",
      KvStoreProvider.class,
      List.of(),
      Map.of(
          "memory", "kvtier-stores",
          "file", "kvtier-stores",
          "hazelcast", "kvtier-collective-hazelcast"));

  private final String id;
  private final Class<? extends KvTierProvider> spi;
  private final List<String> defaultAutoOrder;
  private final Map<String, String> knownArtifacts;

  ProviderKind(
      String id,
      Class<? extends KvTierProvider> spi,
      List<String> defaultAutoOrder,
      Map<String, String> knownArtifacts) {
    this.id = id;
    this.spi = spi;
    this.defaultAutoOrder = defaultAutoOrder;
    this.knownArtifacts = knownArtifacts;
  }

  /**
   * The kind whose provider interface is {@code spi}.
   *
   * @param spi a provider interface
   * @return the kind, or empty for an interface that is none of the four
   */
  public static Optional<ProviderKind> forSpi(Class<?> spi) {
    for (ProviderKind kind : values()) {
      if (kind.spi == spi) {
        return Optional.of(kind);
      }
    }
    return Optional.empty();
  }

  /**
   * The configuration key that selects the provider.
   *
   * @return for example {@code kvtier.device}
   */
  public String configKey() {
    return "kvtier." + id;
  }

  /**
   * The short name used in configuration keys and listings.
   *
   * @return for example {@code device}
   */
  public String id() {
    return id;
  }

  /**
   * The provider interface.
   *
   * @return for example {@code DeviceMemoryProvider.class}
   */
  public Class<? extends KvTierProvider> spi() {
    return spi;
  }

  /**
   * The names {@code auto} tries, in order, unless the configuration sets another order. Names
   * that are not on the module path are skipped.
   *
   * @return an immutable list, empty for the store (which {@code auto} leaves at none)
   */
  public List<String> defaultAutoOrder() {
    return defaultAutoOrder;
  }

  /**
   * Whether the engine runs without a provider of this kind ({@code none}).
   *
   * @return true for the L3 store only
   */
  public boolean optional() {
    return this == STORE;
  }

  /**
   * The Maven artifact known to provide {@code name}, to tell a user what to put on the module
   * path.
   *
   * @param name a provider name
   * @return the artifact id, or empty when no kvtier module is known to provide it
   */
  public Optional<String> knownArtifact(String name) {
    return Optional.ofNullable(knownArtifacts.get(name));
  }
}
