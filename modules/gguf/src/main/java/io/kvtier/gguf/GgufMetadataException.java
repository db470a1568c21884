package io.kvtier.gguf;

/**
 * A metadata key that is missing or holds a value of another type than the caller asked for.
 * {@link #key()} names the key.
 */
public final class GgufMetadataException extends GgufException {
  private static final long serialVersionUID = 1L;
  private final String key;

  /** An exception about {@code key} with {@code message}. */
  public GgufMetadataException(String key, String message) {
    super(message);
    this.key = key;
  }

  /** The metadata key that was missing or of the wrong type. */
  public String key() {
    return key;
  }
}
