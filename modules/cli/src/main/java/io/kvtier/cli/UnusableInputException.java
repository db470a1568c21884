package io.kvtier.cli;

/**
 * An input or environment the command cannot use: a missing or malformed file, a provider that
 * is not on the module path or is unavailable here, an output path that cannot be written.
 * {@link KvTierCli} prints its message as one line and exits with {@link KvTierCli#EXIT_USAGE},
 * like a usage error: the run did not start, so no check failed. The message says what was wrong,
 * in the user's option names, and what to do.
 */
public final class UnusableInputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * An unusable input.
   *
   * @param message what was wrong and what to do, one line
   */
  public UnusableInputException(String message) {
    super(message);
  }

  /**
   * An unusable input with its cause.
   *
   * @param message what was wrong and what to do, one line
   * @param cause the failure that showed it
   */
  public UnusableInputException(String message, Throwable cause) {
    super(message, cause);
  }
}
