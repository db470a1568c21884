package io.kvtier.spi;

/**
 * What every provider of every SPI has in common. Implementations must have a public no-argument
 * constructor (or a static {@code provider()} method) that does no work beyond field
 * initialization: probing hardware or loading native libraries belongs in {@link
 * #availability()} and in the factory method.
 */
public interface KvTierProvider {

  /**
   * The provider's stable name, equal to the {@link ProviderName} annotation on its class.
   *
   * @return the name used for selection, for example {@code kvtier.device=sim}
   */
  String name();

  /**
   * Whether this provider can be used on this machine now. Must never throw: any failure of the
   * probe is reported as {@link Availability#unavailable(String)} with the reason and the fix.
   * May be called more than once; implementations may cache the result.
   *
   * @return the availability with a human-readable reason when unavailable
   */
  Availability availability();

  /**
   * The configuration namespace of this provider's module: properties whose keys start with
   * {@code namespace + "."} are handed to the provider through {@link
   * BackendContext#properties()}. Providers of one module share one namespace (the {@code sim}
   * device, host and collective all read {@code sim.*}), and must reject keys they do not know.
   *
   * @return the namespace without the trailing dot; by default the provider's name
   */
  default String configNamespace() {
    return name();
  }
}
