package io.kvtier.core.discovery;

/**
 * The provider asked for is on the module path but its availability probe says it cannot be used
 * here, or {@code auto} found no available provider. The message carries each provider's reason.
 */
public class ProviderUnavailableException extends ProviderException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed and how to fix it
   */
  public ProviderUnavailableException(String message) {
    super(message, null);
  }

  /**
   * Creates the exception with a cause.
   *
   * @param message what failed and how to fix it
   * @param cause the underlying error
   */
  public ProviderUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
