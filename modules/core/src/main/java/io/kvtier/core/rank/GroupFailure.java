package io.kvtier.core.rank;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A rank's failure as it travels to the other ranks: encoded into the tag of a barrier that no
 * healthy rank calls, so that the providers' desync message, which names every rank's call and
 * tag, carries it to every rank ({@link RankGroupFailedException}). Base64url keeps the tag free
 * of spaces, quotes and line breaks, which the providers' messages would otherwise mangle.
 *
 * @param rank the failed rank
 * @param tick the tick it failed in
 * @param step the step that failed
 * @param cause the failure's class and message, at most {@link #MAX_CAUSE} characters
 */
record GroupFailure(int rank, long tick, TickStep step, String cause) {
  /** The longest cause description a tag carries. */
  static final int MAX_CAUSE = 400;

  private static final String PREFIX = "kvtier-rank-failed[";
  private static final Pattern TAG = Pattern.compile(Pattern.quote(PREFIX) + "([A-Za-z0-9_-]+)]");
  private static final int VERSION = 1;

  /** Causes followed at most when looking for a tag (a chain may be long, or loop). */
  private static final int MAX_CHAIN = 16;

  /**
   * The failure of a step on this rank.
   *
   * @param rank this rank
   * @param tick the tick
   * @param step the step
   * @param failure what the step threw
   * @return the failure, its cause shortened
   */
  static GroupFailure of(int rank, long tick, TickStep step, Throwable failure) {
    return of(rank, tick, step, describe(failure));
  }

  /**
   * The failure of a step on this rank, described already.
   *
   * @param rank this rank
   * @param tick the tick
   * @param step the step
   * @param cause the failure's description ({@link #describe}, {@link #fallback})
   * @return the failure, its cause shortened
   */
  static GroupFailure of(int rank, long tick, TickStep step, String cause) {
    if (cause.length() > MAX_CAUSE) {
      cause = cause.substring(0, MAX_CAUSE - 3) + "...";
    }
    return new GroupFailure(rank, tick, step, cause);
  }

  /**
   * A failure's {@code toString()}, or, when that throws (a broken override, an {@link
   * OutOfMemoryError} while it builds the text), a description from its class alone, which cannot
   * throw for a reason of the failure's own.
   *
   * @param failure what a step threw
   * @return its class and message, or its class and why there is no message
   */
  static String describe(Throwable failure) {
    try {
      return String.valueOf(failure);
    } catch (RuntimeException | Error broken) {
      return fallback(failure, broken);
    }
  }

  /**
   * The description of a failure that calls none of its methods: its class, and the class of
   * what describing it threw.
   *
   * @param failure what a step threw
   * @param broken what describing it threw
   * @return the description
   */
  static String fallback(Throwable failure, Throwable broken) {
    return failure.getClass().getName()
        + " (not described: describing it threw "
        + broken.getClass().getName()
        + ")";
  }

  /**
   * The tag of the barrier that tells the group.
   *
   * @return {@code kvtier-rank-failed[<base64url>]}
   */
  String tag() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(VERSION);
      out.writeInt(rank);
      out.writeLong(tick);
      out.writeByte(step.ordinal());
      out.writeUTF(cause);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return PREFIX
        + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes.toByteArray())
        + "]";
  }

  /**
   * The failure another rank told through a collective's message, found in a throwable or its
   * causes (a model may wrap the collective's exception in its own): the lowest rank's, in the
   * first message that names any.
   *
   * @param failure what a step threw
   * @return the failure, or empty if no message in the chain names one
   */
  static Optional<GroupFailure> find(Throwable failure) {
    Throwable t = failure;
    for (int depth = 0; t != null && depth < MAX_CHAIN; depth++) {
      Optional<GroupFailure> found = find(messageOf(t));
      if (found.isPresent()) {
        return found;
      }
      Throwable next;
      try {
        next = t.getCause();
      } catch (RuntimeException | Error broken) {
        return Optional.empty();
      }
      if (next == t) {
        break;
      }
      t = next;
    }
    return Optional.empty();
  }

  /** A throwable's message, or null when its {@code getMessage()} throws. */
  private static String messageOf(Throwable t) {
    try {
      return t.getMessage();
    } catch (RuntimeException | Error broken) {
      return null;
    }
  }

  /**
   * The failure of the lowest rank among those whose tags a collective's message names.
   *
   * @param message a collective exception's message, or null
   * @return the failure, or empty if the message names none
   */
  static Optional<GroupFailure> find(String message) {
    if (message == null) {
      return Optional.empty();
    }
    GroupFailure lowest = null;
    Matcher m = TAG.matcher(message);
    while (m.find()) {
      GroupFailure f = decode(m.group(1));
      if (f != null && (lowest == null || f.rank < lowest.rank)) {
        lowest = f;
      }
    }
    return Optional.ofNullable(lowest);
  }

  /** Decodes a tag's body, or null if it is not one this version wrote. */
  private static GroupFailure decode(String body) {
    try (DataInputStream in =
        new DataInputStream(new ByteArrayInputStream(Base64.getUrlDecoder().decode(body)))) {
      if (in.readUnsignedByte() != VERSION) {
        return null;
      }
      int rank = in.readInt();
      long tick = in.readLong();
      int step = in.readUnsignedByte();
      String cause = in.readUTF();
      if (rank < 0 || step >= TickStep.values().length) {
        return null;
      }
      return new GroupFailure(rank, tick, TickStep.values()[step], cause);
    } catch (IOException | IllegalArgumentException e) {
      return null;
    }
  }
}
