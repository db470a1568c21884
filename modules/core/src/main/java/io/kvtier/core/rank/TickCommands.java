package io.kvtier.core.rank;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What rank 0 tells every rank at the start of a tick (step 1, {@code recv}): the requests that
 * arrived, the requests to abort, and whether the input has ended. Every rank applies the same
 * commands at the same tick, which keeps the request queues replicated.
 *
 * <p>Arrivals are queued first, then aborts are applied, so an abort may name a request of the
 * same tick. An abort of an id that is neither waiting nor running is ignored on every rank.
 *
 * <p>Skipping: a tick in which nothing is outstanding and nothing arrives does nothing but count
 * (no request waiting, prefetching or running, no copy outstanding: {@link RankEngine#isIdle()}).
 * Rank 0 may leave a run of such ticks out: the next commands it broadcasts say how many ticks
 * it skipped, and every rank advances its tick number by as many before it applies them, the
 * same on every rank, so the skipped ticks cost no broadcast and no step. The commands of the
 * tick that ends the run name the arrivals of that tick, as they would have without the skip.
 *
 * @param arrivals new requests, in queue order
 * @param aborts ids of requests to abort, in order
 * @param endOfInput no request will arrive after this tick; the engine drains and then reports
 *     {@link RankEngine#isDrained()}
 * @param skippedTicks idle ticks rank 0 skipped before this one, 0 for none; the engine
 *     advances its tick number by as many first, and fails if it is not idle
 */
public record TickCommands(
    List<RankRequest> arrivals, long[] aborts, boolean endOfInput, long skippedTicks) {

  /** No arrivals, no aborts, input open. */
  public static final TickCommands NONE = new TickCommands(List.of(), new long[0], false);

  /** No arrivals, no aborts, input ended. */
  public static final TickCommands END = new TickCommands(List.of(), new long[0], true);

  /** Validates and copies the fields. */
  public TickCommands {
    arrivals = List.copyOf(Objects.requireNonNull(arrivals, "arrivals"));
    aborts = Objects.requireNonNull(aborts, "aborts").clone();
    if (skippedTicks < 0) {
      throw new IllegalArgumentException(
          "skippedTicks=" + skippedTicks + " must be >= 0 (0 when no tick was skipped)");
    }
  }

  /**
   * Commands that skip no tick.
   *
   * @param arrivals new requests, in queue order
   * @param aborts ids of requests to abort, in order
   * @param endOfInput no request will arrive after this tick
   */
  public TickCommands(List<RankRequest> arrivals, long[] aborts, boolean endOfInput) {
    this(arrivals, aborts, endOfInput, 0);
  }

  /**
   * These commands after {@code ticks} skipped idle ticks.
   *
   * @param ticks the idle ticks rank 0 leaves out before these commands
   * @return the commands, skipping {@code ticks}
   */
  public TickCommands afterSkipping(long ticks) {
    return new TickCommands(arrivals, aborts, endOfInput, ticks);
  }

  /**
   * Commands with arrivals only.
   *
   * @param arrivals the new requests
   * @return the commands
   */
  public static TickCommands arrive(List<RankRequest> arrivals) {
    return new TickCommands(arrivals, new long[0], false);
  }

  /**
   * The abort ids.
   *
   * @return a copy
   */
  @Override
  public long[] aborts() {
    return aborts.clone();
  }

  /**
   * Whether there is nothing to do besides the end-of-input flag.
   *
   * @return true if no arrival and no abort
   */
  public boolean isEmpty() {
    return arrivals.isEmpty() && aborts.length == 0;
  }

  /**
   * These commands as the compact bytes that rank 0 broadcasts.
   *
   * @return the encoding of {@link TickCommandCodec}
   */
  public byte[] encode() {
    return TickCommandCodec.encode(this);
  }

  /**
   * Decodes commands broadcast by rank 0.
   *
   * @param bytes the encoding of {@link #encode()}
   * @return the commands
   * @throws IllegalArgumentException if the bytes are not a valid encoding
   */
  public static TickCommands decode(byte[] bytes) {
    return TickCommandCodec.decode(bytes);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TickCommands c
        && endOfInput == c.endOfInput
        && skippedTicks == c.skippedTicks
        && arrivals.equals(c.arrivals)
        && Arrays.equals(aborts, c.aborts);
  }

  @Override
  public int hashCode() {
    return ((arrivals.hashCode() * 31 + Arrays.hashCode(aborts)) * 31 + Long.hashCode(skippedTicks))
            * 2
        + (endOfInput ? 1 : 0);
  }

  @Override
  public String toString() {
    return "TickCommands[arrivals="
        + arrivals.size()
        + ", aborts="
        + Arrays.toString(aborts)
        + ", endOfInput="
        + endOfInput
        + (skippedTicks == 0 ? "" : ", skippedTicks=" + skippedTicks)
        + "]";
  }
}
