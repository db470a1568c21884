package io.kvtier.asserting;

import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.ProviderName;
import java.util.List;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * Finds a provider by name through {@link ServiceLoader}, as the engine does, for tests that
 * want the provider an engine would get rather than a hand-made instance:
 *
 * <pre>{@code
 * protected DeviceMemoryProvider deviceProvider() {
 *   return Providers.named(DeviceMemoryProvider.class, "sim");
 * }
 * }</pre>
 *
 * <p>Only the selected provider is instantiated; names come from {@link ProviderName}.
 */
public final class Providers {

  private Providers() {}

  /**
   * The one provider of {@code spi} named {@code name}.
   *
   * @param spi the provider interface, one that the asserting module {@code uses}: {@code
   *     DeviceMemoryProvider}, {@code HostMemoryProvider}, {@code CollectiveProvider} or {@code
   *     KvStoreProvider}
   * @param name the provider's name
   * @param <P> the provider type
   * @return a new instance of the provider
   * @throws IllegalArgumentException if no provider or several have the name, listing the names
   *     found and how to fix it
   */
  public static <P extends KvTierProvider> P named(Class<P> spi, String name) {
    Objects.requireNonNull(spi, "spi");
    Objects.requireNonNull(name, "name");
    List<ServiceLoader.Provider<P>> all = ServiceLoader.load(spi).stream().toList();
    List<ServiceLoader.Provider<P>> named =
        all.stream().filter(p -> name.equals(nameOf(p))).toList();
    if (named.size() == 1) {
      return named.get(0).get();
    }
    String found =
        all.stream()
            .map(p -> nameOf(p) + " (" + p.type().getName() + ")")
            .collect(Collectors.joining(", "));
    if (named.isEmpty()) {
      throw new IllegalArgumentException(
          "no "
              + spi.getSimpleName()
              + " named '"
              + name
              + "' was found; found: ["
              + found
              + "]. Put the module that provides it on the module path, or use one of the"
              + " names found");
    }
    throw new IllegalArgumentException(
        named.size()
            + " "
            + spi.getSimpleName()
            + "s are named '"
            + name
            + "': ["
            + found
            + "]; remove all but one from the path");
  }

  private static String nameOf(ServiceLoader.Provider<?> p) {
    ProviderName n = p.type().getAnnotation(ProviderName.class);
    return n == null ? "<no @ProviderName>" : n.value();
  }
}
