package io.kvtier.core.discovery;

/**
 * Selecting a provider of an SPI failed. Subclasses name the failure; every message names the SPI,
 * the name asked for, the providers found and the fix.
 */
public abstract class ProviderException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed and how to fix it
   * @param cause the underlying error, or null
   */
  protected ProviderException(String message, Throwable cause) {
    super(message, cause);
  }
}
