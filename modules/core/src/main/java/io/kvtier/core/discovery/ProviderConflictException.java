package io.kvtier.core.discovery;

/**
 * Two provider classes of one SPI declare the same name. kvtier never picks the "first" of them:
 * the message names both classes and their modules so that one can be removed from the module
 * path.
 */
public class ProviderConflictException extends ProviderException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed and how to fix it
   */
  public ProviderConflictException(String message) {
    super(message, null);
  }

  /**
   * Creates the exception with a cause.
   *
   * @param message what failed and how to fix it
   * @param cause the underlying error
   */
  public ProviderConflictException(String message, Throwable cause) {
    super(message, cause);
  }
}
