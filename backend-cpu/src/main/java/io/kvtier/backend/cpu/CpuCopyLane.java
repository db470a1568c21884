package io.kvtier.backend.cpu;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferFailedException;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The batches of one direction and the task that copies them on the engine's copier threads.
 *
 * <p>Design note. FIFO completion and "the last copy into a block wins" both follow from running
 * one batch of a lane at a time, head first: at most one drain task of a lane is on the executor
 * ({@code scheduled}), it copies the head, completes it, and if more wait it hands itself back to
 * the executor instead of looping. Why hand back: with one copier thread the other direction's
 * task is queued behind, and handing back lets the two directions take turns batch by batch, so
 * a long run of backups cannot starve a load-back. With two threads each direction keeps a
 * thread busy and the hand-back costs a queue hop (well under a microsecond against the copy).
 *
 * <p>The head stays in {@code pending} while it copies and is removed, under the lock, just
 * before its handle is completed; so {@link #inFlight()} never counts a done batch and is zero as
 * soon as the last await returns.
 */
final class CpuCopyLane {

  private final TransferDirection direction;
  private final CpuBlockCopier copier;
  private final Executor executor;
  private final TimeSource time;
  private final BackendMetrics metrics;
  private final String bytesMetric;
  private final String latencyMetric;
  private final String failuresMetric;
  private final String copiesMetric;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition drained = lock.newCondition();
  private final ArrayDeque<CpuTransferHandle> pending = new ArrayDeque<>();
  private final Runnable drainOne = this::drainOne;
  private long nextSequence;
  private boolean scheduled;
  private boolean closed;

  CpuCopyLane(
      TransferDirection direction,
      CpuBlockCopier copier,
      Executor executor,
      TimeSource time,
      BackendMetrics metrics) {
    this.direction = direction;
    this.copier = copier;
    this.executor = executor;
    this.time = time;
    this.metrics = metrics;
    // Built once: metrics are reported per batch and must not allocate there.
    String suffix = direction == TransferDirection.HOST_TO_DEVICE ? "h2d" : "d2h";
    this.bytesMetric = "transfer.bytes." + suffix;
    this.latencyMetric = "transfer.latency." + suffix;
    this.failuresMetric = "transfer.failures." + suffix;
    this.copiesMetric = "transfer.copies." + suffix;
  }

  /**
   * Queues a checked batch.
   *
   * @throws IllegalStateException if the lane is closed
   */
  CpuTransferHandle submit(TransferBatch batch, long bytes) {
    lock.lock();
    try {
      if (closed) {
        throw CpuTransferEngine.closedException();
      }
      CpuTransferHandle handle =
          new CpuTransferHandle(batch, nextSequence++, bytes, time.nanoTime(), time);
      pending.addLast(handle);
      if (!scheduled) {
        scheduled = true;
        executor.execute(drainOne);
      }
      return handle;
    } finally {
      lock.unlock();
    }
  }

  int inFlight() {
    lock.lock();
    try {
      return pending.size();
    } finally {
      lock.unlock();
    }
  }

  /** Stops accepting batches and waits until every queued one is done. Idempotent. */
  void close() {
    lock.lock();
    try {
      closed = true;
      // Uninterruptibly: returning early would let the caller free memory a copy still uses.
      while (!pending.isEmpty()) {
        drained.awaitUninterruptibly();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Copies the head batch, completes it, and hands the lane back if more batches wait. */
  private void drainOne() {
    CpuTransferHandle head;
    lock.lock();
    try {
      head = pending.peekFirst();
    } finally {
      lock.unlock();
    }
    TransferFailedException failure = null;
    int copies = 0;
    try {
      copies = copier.copy(head.batch());
    } catch (RuntimeException | Error e) {
      failure =
          new TransferFailedException(
              describe(head)
                  + " failed: "
                  + e
                  + "; the destination pages hold undefined bytes. Close the transfer engine"
                  + " before closing its pools",
              e);
    }
    long latency = time.nanoTime() - head.submitNanos();
    lock.lock();
    try {
      pending.removeFirst();
      head.complete(failure);
      if (pending.isEmpty()) {
        scheduled = false;
        drained.signalAll();
      } else {
        executor.execute(drainOne);
      }
    } finally {
      lock.unlock();
    }
    metrics.recordNanos(latencyMetric, latency);
    if (failure == null) {
      metrics.increment(bytesMetric, head.bytes());
      metrics.increment(copiesMetric, copies);
    } else {
      metrics.increment(failuresMetric, 1);
    }
  }

  private String describe(CpuTransferHandle h) {
    TransferBatch b = h.batch();
    return "cpu "
        + direction
        + " batch seq="
        + h.sequence()
        + " (pages="
        + b.size()
        + (b.layer().isPresent() ? ", layer=" + b.layer().getAsInt() : ", all layers")
        + ", bytes="
        + h.bytes()
        + ")";
  }
}
