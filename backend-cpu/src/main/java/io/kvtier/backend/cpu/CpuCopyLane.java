package io.kvtier.backend.cpu;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.CopyCheck;
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
 * ({@code scheduled}). When the lane has a thread of its own ({@code cpu.copy-threads=2}) the
 * task runs until the lane is empty. When the two lanes share one thread ({@code handBack}) it
 * hands itself back to the executor after each batch, so the directions take turns batch by
 * batch and a long run of backups cannot starve a load-back. Why not always hand back: the hop
 * through the executor's queue cost about 6 us per batch in {@link CpuCopyBenchmark}'s one-block
 * batches on a loaded 2-core machine, more than copying one 64 KiB block (about 4 us).
 *
 * <p>The head stays in {@code pending} while it copies and is removed, under the lock, just
 * before its handle is completed; so {@link #inFlight()} never counts a done batch and is zero as
 * soon as the last await returns.
 */
final class CpuCopyLane {

  private static final System.Logger LOG = System.getLogger(CpuCopyLane.class.getName());

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
  private final Runnable drain = this::drain;
  private final boolean handBack;
  private long nextSequence;
  private boolean scheduled;
  private boolean closed;

  CpuCopyLane(
      TransferDirection direction,
      CpuBlockCopier copier,
      Executor executor,
      boolean handBack,
      TimeSource time,
      BackendMetrics metrics) {
    this.direction = direction;
    this.copier = copier;
    this.executor = executor;
    this.handBack = handBack;
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
  CpuTransferHandle submit(TransferBatch batch, long bytes, CopyCheck check) {
    lock.lock();
    try {
      if (closed) {
        throw CpuTransferEngine.closedException();
      }
      CpuTransferHandle handle =
          new CpuTransferHandle(batch, nextSequence++, bytes, time.nanoTime(), time, check);
      pending.addLast(handle);
      if (!scheduled) {
        scheduled = true;
        executor.execute(drain);
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

  /**
   * Copies batches from the head and completes each; on a shared thread it hands the lane back to
   * the executor after each batch, on a thread of its own it goes on until the lane is empty.
   */
  private void drain() {
    CpuTransferHandle head;
    lock.lock();
    try {
      head = pending.peekFirst();
    } finally {
      lock.unlock();
    }
    while (head != null) {
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
      if (failure == null && head.check() != null) {
        failure = runCheck(head);
      }
      long latency = time.nanoTime() - head.submitNanos();
      CpuTransferHandle next;
      lock.lock();
      try {
        pending.removeFirst();
        head.complete(failure);
        next = pending.peekFirst();
        if (next == null) {
          scheduled = false;
          drained.signalAll();
        } else if (handBack) {
          executor.execute(drain);
        }
      } finally {
        lock.unlock();
      }
      report(head, latency, copies, failure);
      head = handBack ? null : next;
    }
  }

  /** Runs the batch's check on this copier thread; its failure fails the batch. */
  private TransferFailedException runCheck(CpuTransferHandle h) {
    try {
      h.check().afterCopy(h.batch());
      return null;
    } catch (TransferFailedException e) {
      return e;
    } catch (RuntimeException | Error e) {
      return new TransferFailedException(describe(h) + ": its check failed: " + e, e);
    }
  }

  /**
   * Reports one batch. A metrics sink that throws must not kill the drain task: the lane would
   * keep its batches forever and close() would never return.
   */
  private void report(
      CpuTransferHandle h, long latency, int copies, TransferFailedException failure) {
    try {
      metrics.recordNanos(latencyMetric, latency);
      if (failure == null) {
        metrics.increment(bytesMetric, h.bytes());
        metrics.increment(copiesMetric, copies);
      } else {
        metrics.increment(failuresMetric, 1);
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "the metrics of " + describe(h) + " were lost", e);
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
