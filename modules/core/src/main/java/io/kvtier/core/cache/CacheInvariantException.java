package io.kvtier.core.cache;

/** {@link CacheInvariants} found the cache in a state the engine must never reach. */
public class CacheInvariantException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message which invariant, on which node or slot, with the values seen
   */
  public CacheInvariantException(String message) {
    super(message);
  }
}
