package io.kvtier.core.discovery;

import java.util.Locale;
import java.util.Objects;

/**
 * What one provider found on the module path says about itself, for listings and error messages.
 *
 * @param spi the SPI's interface name, for example {@code io.kvtier.spi.DeviceMemoryProvider}
 * @param name the provider's declared name
 * @param module the provider's module name, or {@code "-"} on the class path
 * @param className the provider class
 * @param status whether it can be used
 * @param reason the availability probe's reason, or why the provider is broken
 */
public record ProviderReport(
    String spi,
    String name,
    String module,
    String className,
    Status status,
    String reason,
    boolean testing) {

  /** Whether a provider can be used. */
  public enum Status {
    /** The availability probe says yes. */
    AVAILABLE,
    /** The availability probe says no, with a reason. */
    UNAVAILABLE,
    /**
     * The provider is declared wrongly: its constructor or probe threw, or its {@code name()}
     * differs from its annotation.
     */
    BROKEN;

    /**
     * The lower-case word used in listings.
     *
     * @return {@code available}, {@code unavailable} or {@code broken}
     */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * The report of a provider that is not a testing provider.
   *
   * @param spi the SPI's binary name
   * @param name the provider's name
   * @param module the provider's module
   * @param className the provider's class
   * @param status whether it can be used
   * @param reason why, from its availability probe or its declaration error
   */
  public ProviderReport(
      String spi, String name, String module, String className, Status status, String reason) {
    this(spi, name, module, className, status, reason, false);
  }

  /** Validates the fields. */
  public ProviderReport {
    Objects.requireNonNull(spi, "spi");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(module, "module");
    Objects.requireNonNull(className, "className");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(reason, "reason");
  }

  /**
   * Whether the provider can be used.
   *
   * @return true if {@link #status()} is {@link Status#AVAILABLE}
   */
  public boolean available() {
    return status == Status.AVAILABLE;
  }

  /**
   * One line for error messages: {@code sim (available: off-heap; module io.kvtier.backend.sim,
   * class ...)}.
   *
   * @return the summary
   */
  public String summary() {
    String why = reason.isBlank() ? "" : ": " + reason;
    return name + " (" + status.label() + why + "; module " + module + ", class " + className + ")";
  }
}
