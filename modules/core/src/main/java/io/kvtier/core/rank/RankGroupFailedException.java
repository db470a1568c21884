package io.kvtier.core.rank;

import java.util.Objects;

/**
 * A rank of the group failed in a step (its step threw an exception or an {@link Error} and its
 * thread lived on), so the whole group stops: raised on every rank, at the failed rank's next
 * collective, naming the rank that failed, the tick and step it failed in and its cause. After
 * it, every step of the engine throws this same exception; close the engines and the collective
 * group, and start a new group to go on.
 *
 * <p>How it reaches every rank: the failed rank makes one collective call that no healthy rank
 * ever makes, a barrier whose tag encodes the failure. Every provider fails a call on which the
 * ranks disagree with a {@link io.kvtier.spi.CollectiveDesyncException} on every rank, whose
 * message names each rank's call and tag ({@link io.kvtier.spi.Collective}); the engine finds
 * the encoded failure in it and raises this exception instead. So the others learn of the
 * failure in the collective they are in or reach next, not at the watchdog. A rank whose thread
 * or process died makes no call at all: where the collective's own failure detection finds it
 * gone ({@link io.kvtier.spi.CollectiveRankLostException}) every waiting rank raises this
 * exception naming it, in the step it waited in; otherwise it is the watchdog's case.
 *
 * <p>On the failed rank the {@link #getCause() cause} is the step's own exception or error; on
 * the others it is the collective's desync exception, and {@link #causeDescription()} carries
 * the failed rank's cause (class and message, shortened to {@value GroupFailure#MAX_CAUSE}
 * characters).
 */
public class RankGroupFailedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int rank;
  private final int failedRank;
  private final long tick;
  private final TickStep step;
  private final String causeDescription;

  /**
   * Creates the exception.
   *
   * @param rank the rank that raises it
   * @param failedRank the rank whose step failed
   * @param tick the tick in which it failed
   * @param step the step that failed
   * @param causeDescription the failure's class and message, as the failed rank described it
   * @param seenIn where this rank learned of it, for example {@code "tick 3, step SYNC"}
   * @param cause the step's own exception on the failed rank; the collective's exception that
   *     carried the failure on the others
   */
  public RankGroupFailedException(
      int rank,
      int failedRank,
      long tick,
      TickStep step,
      String causeDescription,
      String seenIn,
      Throwable cause) {
    super(
        "rank "
            + failedRank
            + " failed at tick "
            + tick
            + " in step "
            + Objects.requireNonNull(step, "step")
            + ": "
            + Objects.requireNonNull(causeDescription, "causeDescription")
            + (rank == failedRank
                ? ""
                : " (rank "
                    + rank
                    + " learned of it in "
                    + Objects.requireNonNull(seenIn, "seenIn")
                    + ")")
            + "; the whole rank group stops: close every rank's engine and the collective group,"
            + " then start a new group to go on",
        cause);
    this.rank = rank;
    this.failedRank = failedRank;
    this.tick = tick;
    this.step = step;
    this.causeDescription = causeDescription;
  }

  /**
   * The rank that raised it.
   *
   * @return the rank
   */
  public int rank() {
    return rank;
  }

  /**
   * The rank whose step failed. When several ranks fail in the same round, a failed rank names
   * itself and the others name the lowest failed rank the collective's message shows them (the
   * same for all of them: every provider gives every rank the same message).
   *
   * @return the rank
   */
  public int failedRank() {
    return failedRank;
  }

  /**
   * The tick in which the failed rank's step failed.
   *
   * @return the tick, from 0
   */
  public long tick() {
    return tick;
  }

  /**
   * The step that failed on the failed rank.
   *
   * @return the step
   */
  public TickStep step() {
    return step;
  }

  /**
   * The failed rank's cause: its class name and message.
   *
   * @return the description
   */
  public String causeDescription() {
    return causeDescription;
  }
}
