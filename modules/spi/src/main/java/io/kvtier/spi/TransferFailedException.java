package io.kvtier.spi;

/**
 * A page copy failed: the destination pages hold undefined bytes and must not be made visible.
 */
public class TransferFailedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed: direction, sequence, pages
   * @param cause the underlying error, or null
   */
  public TransferFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
