package io.kvtier.backend.sim;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * One batch submitted to a {@link SimTransferEngine}. The mutable fields other than {@code done}
 * and {@code failure} are guarded by the engine's lock; {@code failure} is written before {@code
 * done}, so a reader that sees {@code done} sees the failure too.
 */
final class SimTransferHandle implements TransferHandle {

  /** What a batch was planned to do when it was submitted. */
  enum Plan {
    COPY,
    /** Flip one bit of the first source host block, then copy (host-to-device only). */
    FLIP_AND_COPY,
    FAIL_INJECTED,
    FAIL_RANDOM
  }

  private final SimTransferEngine engine;
  private final TransferBatch batch;
  private final long sequence;
  private final long bytes;
  private final long submitNanos;
  private final Plan plan;

  /** Guarded by the engine lock: when the batch completes unless it is stalled. */
  long dueNanos;

  /** Guarded by the engine lock: held back by an injected stall until released. */
  boolean stalled;

  private volatile TransferFailedException failure;
  private volatile boolean done;

  SimTransferHandle(
      SimTransferEngine engine,
      TransferBatch batch,
      long sequence,
      long bytes,
      long submitNanos,
      long dueNanos,
      Plan plan,
      boolean stalled) {
    this.engine = engine;
    this.batch = batch;
    this.sequence = sequence;
    this.bytes = bytes;
    this.submitNanos = submitNanos;
    this.dueNanos = dueNanos;
    this.plan = plan;
    this.stalled = stalled;
  }

  @Override
  public long sequence() {
    return sequence;
  }

  @Override
  public TransferBatch batch() {
    return batch;
  }

  TransferDirection direction() {
    return batch.direction();
  }

  long bytes() {
    return bytes;
  }

  long submitNanos() {
    return submitNanos;
  }

  Plan plan() {
    return plan;
  }

  @Override
  public boolean isDone() {
    return done || engine.poll(this);
  }

  @Override
  public Optional<Throwable> failure() {
    return done ? Optional.ofNullable(failure) : Optional.empty();
  }

  @Override
  public void await() throws InterruptedException {
    if (!done) {
      engine.await(this, Long.MAX_VALUE);
    }
    throwIfFailed();
  }

  @Override
  public boolean await(Duration timeout) throws InterruptedException {
    Objects.requireNonNull(timeout, "timeout");
    if (!done && !engine.await(this, saturatedNanos(timeout))) {
      return false;
    }
    throwIfFailed();
    return true;
  }

  /** Marks the batch done; called once, under the engine lock. */
  void complete(TransferFailedException failureOrNull) {
    failure = failureOrNull;
    done = true;
  }

  boolean done() {
    return done;
  }

  private void throwIfFailed() {
    TransferFailedException f = failure;
    if (f != null) {
      // A fresh exception per call gives each caller a stack trace of its own await.
      throw new TransferFailedException(f.getMessage(), f);
    }
  }

  private static long saturatedNanos(Duration timeout) {
    if (timeout.isNegative()) {
      return 0;
    }
    try {
      return timeout.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  @Override
  public String toString() {
    return batch.direction()
        + " seq="
        + sequence
        + " "
        + batch
        + (done ? " done" : "")
        + (failure != null ? " failed" : "");
  }
}
