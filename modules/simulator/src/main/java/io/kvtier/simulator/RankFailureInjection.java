package io.kvtier.simulator;

import io.kvtier.core.rank.TickStep;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * A failure the simulator injects into one rank's step ({@code kvtier simulate --fail-rank R
 * --fail-tick T --fail-step STEP --fail-kind KIND}), to show that the group fails together: every
 * rank ends with {@link SimulationFailure#RANK_FAILED} naming rank R and the step.
 *
 * <p>The failure is thrown from the first hook the engine calls on rank {@code rank} inside
 * {@code step} at tick {@code tick} or later: for {@link TickStep#RECEIVE} the {@code recv}
 * broadcast (every tick, so exactly at {@code tick}); for {@link TickStep#SYNC} the fused {@code
 * sync} reduction (ticks with copies outstanding); for {@link TickStep#ADMIT} and {@link
 * TickStep#FINISH} the {@link io.kvtier.core.rank.RequestListener} call of an admission, a
 * rejection or a finished request; for {@link TickStep#FORWARD} the model ({@link
 * io.kvtier.core.rank.ModelRunner}, ticks with a running request); for {@link TickStep#CHECK}
 * the {@code digest} reduction (every {@code digestInterval} ticks). A collective hook throws
 * before the call, as a rank whose step failed before it reached the collective. Where the step
 * does not call its hook at {@code tick} (nothing admitted, nothing running), the failure comes
 * at the next tick that does; the result names the tick it came at.
 *
 * @param rank the rank that fails, from 0; -1 for {@link #NONE}
 * @param tick the first tick at which it may fail, from 0
 * @param step the step that fails
 * @param kind what it throws
 */
public record RankFailureInjection(int rank, long tick, TickStep step, Kind kind) {

  /** No injected failure. */
  public static final RankFailureInjection NONE =
      new RankFailureInjection(-1, 0, TickStep.FORWARD, Kind.EXCEPTION);

  /** What the failing step throws. */
  public enum Kind {
    /** A {@link RuntimeException} ({@link InjectedRankException}). */
    EXCEPTION,
    /** An {@link Error} ({@link InjectedRankError}), as an out-of-memory error would be. */
    ERROR;

    /**
     * The name on the command line.
     *
     * @return {@code exception} or {@code error}
     */
    public String cliName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses a command-line name.
     *
     * @param name {@code exception} or {@code error}, any case
     * @return the kind
     * @throws IllegalArgumentException naming the valid kinds
     */
    public static Kind parse(String name) {
      Objects.requireNonNull(name, "name");
      for (Kind k : values()) {
        if (k.cliName().equals(name.strip().toLowerCase(Locale.ROOT))) {
          return k;
        }
      }
      throw new IllegalArgumentException(
          "'" + name + "' is not a failure kind: give exception or error");
    }
  }

  /** Validates the fields. */
  public RankFailureInjection {
    Objects.requireNonNull(step, "step");
    Objects.requireNonNull(kind, "kind");
    if (rank < -1) {
      throw new IllegalArgumentException(
          "rank=" + rank + " must be a rank (>= 0), or -1 for no injected failure");
    }
    if (tick < 0) {
      throw new IllegalArgumentException("tick=" + tick + " must be >= 0");
    }
  }

  /**
   * A failure of rank {@code rank} in {@code step} at {@code tick}.
   *
   * @param rank the rank, from 0
   * @param tick the tick, from 0
   * @param step the step
   * @param kind what it throws
   * @return the injection
   * @throws IllegalArgumentException if the rank or tick is negative
   */
  public static RankFailureInjection of(int rank, long tick, TickStep step, Kind kind) {
    if (rank < 0) {
      throw new IllegalArgumentException("rank=" + rank + " must be >= 0");
    }
    return new RankFailureInjection(rank, tick, step, kind);
  }

  /**
   * Whether a failure is injected.
   *
   * @return false for {@link #NONE}
   */
  public boolean enabled() {
    return rank >= 0;
  }

  /**
   * Parses a step's command-line name.
   *
   * @param name {@code receive}, {@code sync}, {@code admit}, {@code forward}, {@code finish} or
   *     {@code check}, any case
   * @return the step
   * @throws IllegalArgumentException naming the valid steps
   */
  public static TickStep parseStep(String name) {
    Objects.requireNonNull(name, "name");
    for (TickStep s : TickStep.values()) {
      if (stepName(s).equals(name.strip().toLowerCase(Locale.ROOT))) {
        return s;
      }
    }
    throw new IllegalArgumentException("'" + name + "' is not a step: give one of " + stepNames());
  }

  /**
   * A step's command-line name.
   *
   * @param step the step
   * @return its name in lower case, such as {@code forward}
   */
  public static String stepName(TickStep step) {
    return step.name().toLowerCase(Locale.ROOT);
  }

  /** The steps' command-line names, in tick order. */
  static String stepNames() {
    return Arrays.stream(TickStep.values())
        .map(RankFailureInjection::stepName)
        .collect(Collectors.joining(", "));
  }

  /**
   * The options that ask for this failure, as the message of what the rank throws says.
   *
   * @return {@code --fail-rank R --fail-tick T --fail-step STEP --fail-kind KIND}, or {@code
   *     none}
   */
  public String describe() {
    if (!enabled()) {
      return "none";
    }
    return "--fail-rank "
        + rank
        + " --fail-tick "
        + tick
        + " --fail-step "
        + stepName(step)
        + " --fail-kind "
        + kind.cliName();
  }

  /** What a rank's step throws when an {@link Kind#EXCEPTION} is injected. */
  public static final class InjectedRankException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    InjectedRankException(String message) {
      super(message);
    }
  }

  /** What a rank's step throws when an {@link Kind#ERROR} is injected. */
  public static final class InjectedRankError extends Error {
    private static final long serialVersionUID = 1L;

    InjectedRankError(String message) {
      super(message);
    }
  }
}
