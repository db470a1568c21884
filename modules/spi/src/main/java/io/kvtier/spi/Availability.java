package io.kvtier.spi;

import java.util.Objects;

/**
 * The answer of a provider's availability probe.
 *
 * @param available whether the provider can be used
 * @param reason why not (and what to do about it) when unavailable; a short description of what
 *     was found when available
 */
public record Availability(boolean available, String reason) {

  /** Validates the fields. */
  public Availability {
    Objects.requireNonNull(reason, "reason");
    if (!available && reason.isBlank()) {
      throw new IllegalArgumentException("an unavailable provider must say why (reason is blank)");
    }
  }

  /**
   * An available provider.
   *
   * @param detail what was found, for example the device name; may be empty
   * @return the availability
   */
  public static Availability available(String detail) {
    return new Availability(true, detail);
  }

  /**
   * An unavailable provider.
   *
   * @param reason what is missing and how to fix it, for example "libcuda.so.1 not found: install
   *     the NVIDIA driver"
   * @return the availability
   */
  public static Availability unavailable(String reason) {
    return new Availability(false, reason);
  }
}
