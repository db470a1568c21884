package io.kvtier.backend.sim;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Precise fault injection for one {@link SimTransferEngine}, for tests: the next batches (of a
 * direction, or matching a predicate) fail or stall.
 *
 * <p>A <em>failed</em> batch completes at its modelled time with {@link
 * io.kvtier.spi.TransferHandle#failure()} present, {@code await()} throwing {@link
 * io.kvtier.spi.TransferFailedException}, and its destination pages untouched. A <em>stalled</em>
 * batch never completes until {@link #release()}; batches submitted after it in its direction
 * cannot complete before it (FIFO), so they wait too. Closing the engine fails stalled batches.
 *
 * <p>Rules are consulted at submission, oldest first; the first rule whose direction and
 * predicate match takes the batch and counts down, and is dropped when it reaches zero. Batches
 * that match no rule fall back to the random faults of {@link SimConfig}. Thread-safe: every
 * method takes the engine's lock, so predicates must be quick and must not call the engine.
 */
public final class SimFaults {

  /** What {@link #take} returns for a batch a fail rule took. */
  static final int FAIL = 1;

  /** What {@link #take} returns for a batch a stall rule took. */
  static final int STALL = -1;

  /** What {@link #take} returns for a batch a flip rule took. */
  static final int FLIP = 2;

  private enum Kind {
    FAIL,
    STALL,
    FLIP
  }

  private static final class Rule {
    final Kind kind;
    final Predicate<? super TransferBatch> predicate;
    int remaining;

    Rule(Kind kind, Predicate<? super TransferBatch> predicate, int remaining) {
      this.kind = kind;
      this.predicate = predicate;
      this.remaining = remaining;
    }
  }

  private final SimTransferEngine engine;
  private final List<Rule> rules = new ArrayList<>();

  SimFaults(SimTransferEngine engine) {
    this.engine = engine;
  }

  /**
   * Makes the next {@code count} batches of either direction fail.
   *
   * @param count how many, at least 1
   * @return this
   */
  public SimFaults failNext(int count) {
    return add(Kind.FAIL, b -> true, count);
  }

  /**
   * Makes the next {@code count} batches of one direction fail.
   *
   * @param direction the direction
   * @param count how many, at least 1
   * @return this
   */
  public SimFaults failNext(TransferDirection direction, int count) {
    return add(Kind.FAIL, inDirection(direction), count);
  }

  /**
   * Makes the next {@code count} batches that match a predicate fail.
   *
   * @param predicate which batches, for example {@code b -> b.layer().equals(OptionalInt.of(3))}
   * @param count how many, at least 1
   * @return this
   */
  public SimFaults failMatching(Predicate<? super TransferBatch> predicate, int count) {
    return add(Kind.FAIL, predicate, count);
  }

  /**
   * Corrupts the host tier at rest: before each of the next {@code count} host-to-device batches
   * copies, one bit of its first host page's first block (its layer, or layer 0) is flipped, and
   * the batch then copies as usual. The copy itself succeeds; only a cache that checks what it
   * restores (docs/CACHE.md, "Verified restores") can notice.
   *
   * @param count how many batches, at least 1
   * @return this
   */
  public SimFaults flipNext(int count) {
    return add(Kind.FLIP, inDirection(TransferDirection.HOST_TO_DEVICE), count);
  }

  /**
   * Makes the next {@code count} batches of either direction stall until {@link #release()}.
   *
   * @param count how many, at least 1
   * @return this
   */
  public SimFaults stallNext(int count) {
    return add(Kind.STALL, b -> true, count);
  }

  /**
   * Makes the next {@code count} batches of one direction stall until {@link #release()}.
   *
   * @param direction the direction
   * @param count how many, at least 1
   * @return this
   */
  public SimFaults stallNext(TransferDirection direction, int count) {
    return add(Kind.STALL, inDirection(direction), count);
  }

  /**
   * Makes the next {@code count} batches that match a predicate stall until {@link #release()}.
   *
   * @param predicate which batches
   * @param count how many, at least 1
   * @return this
   */
  public SimFaults stallMatching(Predicate<? super TransferBatch> predicate, int count) {
    return add(Kind.STALL, predicate, count);
  }

  /**
   * Lets every stalled batch go on: each completes at its modelled time or now, whichever is
   * later, once the batches before it in its direction have completed.
   *
   * @return how many batches were released
   */
  public int release() {
    return engine.release(null);
  }

  /**
   * Lets the stalled batches of one direction go on.
   *
   * @param direction the direction
   * @return how many batches were released
   */
  public int release(TransferDirection direction) {
    return engine.release(Objects.requireNonNull(direction, "direction"));
  }

  /**
   * Number of submitted batches currently held by a stall.
   *
   * @return the count
   */
  public int stalled() {
    return engine.stalledCount();
  }

  /**
   * Number of batches the remaining rules will still take.
   *
   * @return the sum of the rules' remaining counts
   */
  public int pending() {
    engine.lock();
    try {
      long sum = 0;
      for (Rule r : rules) {
        sum += r.remaining;
      }
      return (int) Math.min(Integer.MAX_VALUE, sum);
    } finally {
      engine.unlock();
    }
  }

  /** Drops every rule that has not yet taken all its batches; stalled batches stay stalled. */
  public void clear() {
    engine.lock();
    try {
      rules.clear();
    } finally {
      engine.unlock();
    }
  }

  /**
   * What the rules do with a batch being submitted; called under the engine lock.
   *
   * @return {@link #FAIL}, {@link #STALL}, {@link #FLIP}, or 0: no rule matched
   */
  int take(TransferBatch batch) {
    for (Iterator<Rule> it = rules.iterator(); it.hasNext(); ) {
      Rule rule = it.next();
      if (rule.predicate.test(batch)) {
        if (--rule.remaining == 0) {
          it.remove();
        }
        return switch (rule.kind) {
          case FAIL -> FAIL;
          case STALL -> STALL;
          case FLIP -> FLIP;
        };
      }
    }
    return 0;
  }

  private SimFaults add(Kind kind, Predicate<? super TransferBatch> predicate, int count) {
    Objects.requireNonNull(predicate, "predicate");
    if (count < 1) {
      throw new IllegalArgumentException(
          "count="
              + count
              + " must be >= 1: the number of batches to "
              + kind.name().toLowerCase(Locale.ROOT));
    }
    engine.lock();
    try {
      rules.add(new Rule(kind, predicate, count));
    } finally {
      engine.unlock();
    }
    return this;
  }

  private static Predicate<TransferBatch> inDirection(TransferDirection direction) {
    Objects.requireNonNull(direction, "direction");
    return b -> b.direction() == direction;
  }
}
