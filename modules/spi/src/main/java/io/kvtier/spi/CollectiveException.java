package io.kvtier.spi;

/** A collective operation failed; the group is broken and every later call on it throws. */
public class CollectiveException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what failed, naming ranks, operations, tags and sequence numbers
   * @param cause the underlying error, or null
   */
  public CollectiveException(String message, Throwable cause) {
    super(message, cause);
  }
}
