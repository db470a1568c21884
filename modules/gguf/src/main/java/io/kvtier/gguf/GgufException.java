package io.kvtier.gguf;

/**
 * A GGUF file that cannot be read as asked: malformed, truncated, of an unsupported version,
 * tensor type or architecture, or lacking a metadata key. The message names the file and the
 * offending value and, where there is a choice, what is supported.
 */
public class GgufException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An exception with {@code message}. */
  public GgufException(String message) {
    super(message);
  }

  /** An exception with {@code message} caused by {@code cause}. */
  public GgufException(String message, Throwable cause) {
    super(message, cause);
  }
}
