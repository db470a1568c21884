package io.kvtier.backend.cuda;

import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import jcuda.driver.CUevent;

/**
 * One batch submitted to a {@link CudaTransferEngine}: done when the event recorded after its
 * copies has completed and every earlier batch of its direction is done ({@link CudaLane#poll}).
 *
 * <p>Waiting polls the event without blocking in the driver, so that a wait can be interrupted
 * and can time out: it spins for the first microseconds (a layer's copy often finishes in that
 * time) and then parks for growing intervals up to {@value #MAX_PARK_NANOS} ns.
 */
final class CudaTransferHandle implements TransferHandle {

  /** Polls that spin before the first park: a few microseconds of a busy core. */
  private static final int SPIN_POLLS = 64;

  private static final long FIRST_PARK_NANOS = 2_000;
  private static final long MAX_PARK_NANOS = 200_000;

  private final CudaLane lane;
  private final TransferBatch batch;
  private final long sequence;
  private final long bytes;
  private final long submitNanos;
  private final CUevent event;
  private final TransferFailedException submitFailure;
  private volatile TransferFailedException failure;
  private volatile boolean done;

  CudaTransferHandle(
      CudaLane lane,
      TransferBatch batch,
      long sequence,
      long bytes,
      long submitNanos,
      CUevent event,
      TransferFailedException submitFailure) {
    this.lane = lane;
    this.batch = batch;
    this.sequence = sequence;
    this.bytes = bytes;
    this.submitNanos = submitNanos;
    this.event = event;
    this.submitFailure = submitFailure;
  }

  @Override
  public long sequence() {
    return sequence;
  }

  @Override
  public TransferBatch batch() {
    return batch;
  }

  long bytes() {
    return bytes;
  }

  long submitNanos() {
    return submitNanos;
  }

  /** The event recorded after the batch's copies, or null if none could be recorded. */
  CUevent event() {
    return event;
  }

  /** Why the batch already failed while it was enqueued, or null. */
  TransferFailedException submitFailure() {
    return submitFailure;
  }

  @Override
  public boolean isDone() {
    if (!done) {
      lane.poll();
    }
    return done;
  }

  @Override
  public Optional<Throwable> failure() {
    return done ? Optional.ofNullable(failure) : Optional.empty();
  }

  @Override
  public void await() throws InterruptedException {
    waitFor(Long.MAX_VALUE);
    throwIfFailed();
  }

  @Override
  public boolean await(Duration timeout) throws InterruptedException {
    Objects.requireNonNull(timeout, "timeout");
    if (!waitFor(saturatedNanos(timeout))) {
      return false;
    }
    throwIfFailed();
    return true;
  }

  private boolean waitFor(long timeoutNanos) throws InterruptedException {
    long start = lane.time().nanoTime();
    long park = FIRST_PARK_NANOS;
    for (int polls = 0; !isDone(); polls++) {
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while awaiting " + this);
      }
      if (timeoutNanos != Long.MAX_VALUE && lane.time().nanoTime() - start >= timeoutNanos) {
        return false;
      }
      if (polls < SPIN_POLLS) {
        Thread.onSpinWait();
      } else {
        LockSupport.parkNanos(park);
        park = Math.min(park * 2, MAX_PARK_NANOS);
      }
    }
    return true;
  }

  /** Marks the batch done; called once, by the lane, in submission order. */
  void complete(TransferFailedException failureOrNull) {
    failure = failureOrNull;
    done = true;
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
    return "cuda "
        + batch.direction()
        + " seq="
        + sequence
        + " "
        + batch
        + (done ? " done" : "")
        + (failure != null ? " failed" : "");
  }
}
