package io.kvtier.serving;

import io.kvtier.core.rank.RequestOutcome;
import java.util.Objects;

/**
 * A request the {@link io.kvtier.core.rank.RankEngine} ended without finishing it: rejected
 * (its KV can never fit the device pool), its load-back from the host failed to copy, or it was
 * aborted. The request holds nothing any more; sending it again is safe.
 */
public final class RequestFailedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** How the request ended; never {@link RequestOutcome#FINISHED}. */
  private final RequestOutcome outcome;

  /**
   * Creates the exception.
   *
   * @param outcome how the request ended, not {@link RequestOutcome#FINISHED}
   * @param message what happened and what the caller can do
   */
  public RequestFailedException(RequestOutcome outcome, String message) {
    super(message);
    this.outcome = Objects.requireNonNull(outcome, "outcome");
    if (outcome == RequestOutcome.FINISHED) {
      throw new IllegalArgumentException("outcome=FINISHED is not a failure");
    }
  }

  /**
   * How the request ended.
   *
   * @return the outcome, not {@link RequestOutcome#FINISHED}
   */
  public RequestOutcome outcome() {
    return outcome;
  }
}
