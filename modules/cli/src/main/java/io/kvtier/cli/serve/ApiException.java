package io.kvtier.cli.serve;

import java.util.OptionalInt;

/**
 * A request the server answers with an error status and a message, never a 500: a bad request
 * (400), an unknown path (404), a wrong method (405), a body too large (413), a full queue (429)
 * or a full cache (503).
 */
public final class ApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String type;
  private final OptionalInt retryAfterSeconds;

  /**
   * Creates the exception.
   *
   * @param status the HTTP status
   * @param type a short machine-readable kind, for example {@code invalid_request}
   * @param message what was wrong and what to do
   * @param retryAfterSeconds the {@code Retry-After} to send, if any
   */
  public ApiException(int status, String type, String message, OptionalInt retryAfterSeconds) {
    super(message, null, false, false);
    if (status < 400 || status > 599) {
      throw new IllegalArgumentException("status=" + status + " is not an error status");
    }
    this.status = status;
    this.type = type;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /**
   * A 400 for a request body that cannot be served as given.
   *
   * @param message what was wrong
   * @return the exception
   */
  public static ApiException badRequest(String message) {
    return new ApiException(400, "invalid_request", message, OptionalInt.empty());
  }

  /**
   * The HTTP status.
   *
   * @return 4xx or 5xx
   */
  public int status() {
    return status;
  }

  /**
   * The error's kind.
   *
   * @return for example {@code invalid_request}
   */
  public String type() {
    return type;
  }

  /**
   * The {@code Retry-After} header to send.
   *
   * @return seconds, or empty
   */
  public OptionalInt retryAfterSeconds() {
    return retryAfterSeconds;
  }
}
