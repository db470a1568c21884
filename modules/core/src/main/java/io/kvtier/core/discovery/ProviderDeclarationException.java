package io.kvtier.core.discovery;

/**
 * A provider class is declared wrongly: no {@link io.kvtier.spi.ProviderName} annotation, a
 * malformed or reserved name, a {@code name()} that differs from the annotation, or a constructor
 * that throws. The message names the class.
 */
public class ProviderDeclarationException extends ProviderException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed and how to fix it
   */
  public ProviderDeclarationException(String message) {
    super(message, null);
  }

  /**
   * Creates the exception with a cause.
   *
   * @param message what failed and how to fix it
   * @param cause the underlying error
   */
  public ProviderDeclarationException(String message, Throwable cause) {
    super(message, cause);
  }
}
