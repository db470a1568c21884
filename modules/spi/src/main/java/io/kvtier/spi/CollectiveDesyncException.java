package io.kvtier.spi;

/**
 * Ranks of a group called different collective operations (operation, tag, array length or root)
 * at the same sequence number: a rank took a different decision than the others. Thrown on every
 * rank of the call, with each rank's operation, tag and sequence in the message.
 */
public class CollectiveDesyncException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message each rank's operation, tag and sequence number
   */
  public CollectiveDesyncException(String message) {
    super(message, null);
  }
}
