package io.kvtier.spi;

/**
 * A collective call did not complete within the watchdog timeout: some rank never reached it
 * (stuck, dead, or on another code path). The message lists the last calls of every rank that
 * the implementation can see, so that the missing rank and its call site are named.
 */
public class CollectiveTimeoutException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message the waiting call, the timeout, and each rank's last calls
   */
  public CollectiveTimeoutException(String message) {
    super(message, null);
  }
}
