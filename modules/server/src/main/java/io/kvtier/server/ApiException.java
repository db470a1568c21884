package io.kvtier.server;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A request the server answers with an error status and OpenAI's error body {@code {"error":
 * {"message", "type", "param", "code"}}}, never a 500: a bad request (400), a missing or wrong API
 * key (401), an unknown path or model (404), a wrong method (405), a body that did not arrive in
 * time (408), a body too large (413), a full queue (429) or an engine that cannot serve now (503).
 */
public final class ApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** OpenAI's {@code type} of a client's mistake. */
  static final String INVALID_REQUEST = "invalid_request_error";

  /** OpenAI's {@code type} of a failure on the server's side. */
  static final String SERVER_ERROR = "server_error";

  private final int status;
  private final String type;
  private final String code;
  private final transient Optional<String> param;
  private final OptionalInt retryAfterSeconds;

  /**
   * Creates the exception.
   *
   * @param status the HTTP status
   * @param type OpenAI's error type, for example {@code invalid_request_error}
   * @param code a short machine-readable kind, for example {@code queue_full}
   * @param param the request field at fault, if one is
   * @param message what was wrong and what to do
   * @param retryAfterSeconds the {@code Retry-After} to send, if any
   */
  public ApiException(
      int status,
      String type,
      String code,
      Optional<String> param,
      String message,
      OptionalInt retryAfterSeconds) {
    super(message, null, false, false);
    if (status < 400 || status > 599) {
      throw new IllegalArgumentException("status=" + status + " is not an error status");
    }
    this.status = status;
    this.type = Objects.requireNonNull(type, "type");
    this.code = Objects.requireNonNull(code, "code");
    this.param = Objects.requireNonNull(param, "param");
    this.retryAfterSeconds = Objects.requireNonNull(retryAfterSeconds, "retryAfterSeconds");
  }

  /**
   * A 400 for a request body that cannot be served as given, not tied to one field.
   *
   * @param message what was wrong
   * @return the exception
   */
  public static ApiException badRequest(String message) {
    return new ApiException(
        400, INVALID_REQUEST, "invalid_request", Optional.empty(), message, OptionalInt.empty());
  }

  /**
   * A 400 naming the field at fault.
   *
   * @param param the field, as the request spells it (for example {@code messages[1].role})
   * @param message what was wrong
   * @return the exception
   */
  public static ApiException badField(String param, String message) {
    return new ApiException(
        400, INVALID_REQUEST, "invalid_value", Optional.of(param), message, OptionalInt.empty());
  }

  /**
   * A client error other than a bad body (404, 405, 408, 413).
   *
   * @param status the HTTP status
   * @param code the short kind
   * @param message what was wrong and what to do
   * @return the exception
   */
  static ApiException client(int status, String code, String message) {
    return new ApiException(
        status, INVALID_REQUEST, code, Optional.empty(), message, OptionalInt.empty());
  }

  /**
   * A 503: the engine cannot serve the request now.
   *
   * @param code the short kind, for example {@code cache_full}
   * @param message what happened
   * @param retryAfterSeconds the {@code Retry-After} to send, if retrying can help
   * @return the exception
   */
  static ApiException unavailable(String code, String message, OptionalInt retryAfterSeconds) {
    return new ApiException(503, SERVER_ERROR, code, Optional.empty(), message, retryAfterSeconds);
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
   * OpenAI's error type.
   *
   * @return {@code invalid_request_error}, {@code authentication_error}, {@code
   *     rate_limit_error} or {@code server_error}
   */
  public String type() {
    return type;
  }

  /**
   * The error's kind.
   *
   * @return for example {@code queue_full}
   */
  public String code() {
    return code;
  }

  /**
   * The request field at fault.
   *
   * @return the field, or empty
   */
  public Optional<String> param() {
    return param;
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
