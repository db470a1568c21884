package io.kvtier.gguf;

/**
 * A value the library does not support: a GGUF version, tensor type, value type, architecture
 * or tokenizer. The message names the value and lists what is supported.
 */
public final class GgufUnsupportedException extends GgufException {
  private static final long serialVersionUID = 1L;

  /** An exception with {@code message}. */
  public GgufUnsupportedException(String message) {
    super(message);
  }
}
