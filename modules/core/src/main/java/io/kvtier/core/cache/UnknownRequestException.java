package io.kvtier.core.cache;

/** A request id that is not active: never admitted, or already finished or aborted. */
public class UnknownRequestException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final long requestId;

  /**
   * Creates the exception.
   *
   * @param operation the call that named the request, for example {@code finish}
   * @param requestId the id
   */
  public UnknownRequestException(String operation, long requestId) {
    super(
        operation
            + " of request id="
            + requestId
            + ": no such active request (never admitted,"
            + " or already finished or aborted); admit a request before using it and finish or"
            + " abort it once");
    this.requestId = requestId;
  }

  /**
   * The unknown id.
   *
   * @return the id
   */
  public long requestId() {
    return requestId;
  }
}
