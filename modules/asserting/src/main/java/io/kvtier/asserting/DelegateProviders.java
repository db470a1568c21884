package io.kvtier.asserting;

import io.kvtier.spi.KvTierProvider;

/** Finds the provider an asserting provider wraps, by name, through the ServiceLoader. */
final class DelegateProviders {

  private DelegateProviders() {}

  /**
   * The one provider of {@code spi} named {@code name}, instantiated.
   *
   * @throws IllegalArgumentException if none or several have the name, listing what was found
   */
  static <P extends KvTierProvider> P find(Class<P> spi, String name) {
    try {
      return Providers.named(spi, name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("asserting.delegate=" + name + ": " + e.getMessage(), e);
    }
  }

  /** The configuration namespace of the provider named {@code name}, or the name itself. */
  static String namespaceOf(Class<? extends KvTierProvider> spi, String name) {
    try {
      return find(spi, name).configNamespace();
    } catch (IllegalArgumentException e) {
      return name;
    }
  }
}
