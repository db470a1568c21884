package io.kvtier.backend.cpu;

import io.kvtier.spi.CopyCheck;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One batch submitted to a {@link CpuTransferEngine}: done when a copier thread has copied it and
 * its lane has completed every earlier batch of its direction. {@code failure} is written before
 * {@code done}, so a reader that sees {@code done} sees the failure too.
 *
 * <p>Timeouts are measured on the engine's {@link TimeSource}, as the SPI asks. With the wall
 * clock a waiter sleeps on the latch for the whole timeout; with any other clock it re-reads the
 * clock every millisecond of real time, since nothing tells it when that clock moves.
 */
final class CpuTransferHandle implements TransferHandle {

  private static final long FOREIGN_CLOCK_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private final TransferBatch batch;
  private final long sequence;
  private final long bytes;
  private final long submitNanos;
  private final TimeSource time;
  private final CountDownLatch latch = new CountDownLatch(1);
  private volatile TransferFailedException failure;
  private volatile boolean done;
  private final CopyCheck check;

  CpuTransferHandle(
      TransferBatch batch,
      long sequence,
      long bytes,
      long submitNanos,
      TimeSource time,
      CopyCheck check) {
    this.check = check;
    this.batch = batch;
    this.sequence = sequence;
    this.bytes = bytes;
    this.submitNanos = submitNanos;
    this.time = time;
  }

  @Override
  public long sequence() {
    return sequence;
  }

  @Override
  public TransferBatch batch() {
    return batch;
  }

  /** The check to run after the copy, or null. */
  CopyCheck check() {
    return check;
  }

  long bytes() {
    return bytes;
  }

  long submitNanos() {
    return submitNanos;
  }

  @Override
  public boolean isDone() {
    return done;
  }

  @Override
  public Optional<Throwable> failure() {
    return done ? Optional.ofNullable(failure) : Optional.empty();
  }

  @Override
  public void await() throws InterruptedException {
    latch.await();
    throwIfFailed();
  }

  @Override
  public boolean await(Duration timeout) throws InterruptedException {
    Objects.requireNonNull(timeout, "timeout");
    if (!done && !waitFor(saturatedNanos(timeout))) {
      return false;
    }
    throwIfFailed();
    return true;
  }

  private boolean waitFor(long timeoutNanos) throws InterruptedException {
    long start = time.nanoTime();
    while (true) {
      long left = timeoutNanos - (time.nanoTime() - start);
      if (left <= 0) {
        return done;
      }
      long sleep = time == TimeSource.SYSTEM ? left : Math.min(left, FOREIGN_CLOCK_POLL_NANOS);
      if (latch.await(sleep, TimeUnit.NANOSECONDS)) {
        return true;
      }
    }
  }

  /** Marks the batch done; called once, by its lane, in submission order. */
  void complete(TransferFailedException failureOrNull) {
    failure = failureOrNull;
    done = true;
    latch.countDown();
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
    return "cpu "
        + batch.direction()
        + " seq="
        + sequence
        + " "
        + batch
        + (done ? " done" : "")
        + (failure != null ? " failed" : "");
  }
}
