package io.kvtier.core.discovery;

/**
 * No provider of the SPI has the name that was asked for, or {@code auto} found none of its
 * preferred names on the module path. The message lists every provider found with its availability
 * and says which module to put on the module path.
 */
public class ProviderNotFoundException extends ProviderException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed and how to fix it
   */
  public ProviderNotFoundException(String message) {
    super(message, null);
  }

  /**
   * Creates the exception with a cause.
   *
   * @param message what failed and how to fix it
   * @param cause the underlying error
   */
  public ProviderNotFoundException(String message, Throwable cause) {
    super(message, cause);
  }
}
