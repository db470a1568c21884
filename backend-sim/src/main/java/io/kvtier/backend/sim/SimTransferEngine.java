package io.kvtier.backend.sim;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The simulated copy engine between a {@code sim} device pool and any host pool.
 *
 * <p>Design note. Timing: a batch's completion time is fixed at submission by the {@link
 * SimTimingModel} (FIFO queue per direction, latency + bytes / bandwidth, rank skew, seeded
 * jitter), read against the {@link TimeSource} of the {@link BackendContext}, which may be the
 * wall clock or a {@link ManualTimeSource}. No background thread exists: a batch becomes done
 * when someone observes it ({@code isDone}, {@code await}, {@code inFlight}, a later {@code
 * submit}) at or after its completion time, and only after every earlier batch of its direction.
 *
 * <p>Bytes: the copy reads the source and writes the destination when the batch is first
 * observed done, in submission order. So the destination never shows new bytes before the batch
 * is done (reading it early returns stale data, as on hardware), and a source page freed or
 * reused before the batch is done lands in the destination (as a real DMA would read it). Both
 * contract violations thus corrupt data where a checker can see them, and the engine needs no
 * snapshot buffer. A failed batch never writes its destination.
 *
 * <p>Stalls injected with {@link #faults()} hold a batch until released; a released batch
 * completes at its modelled time or at the release, whichever is later. Close: with the wall
 * clock ({@link TimeSource#SYSTEM}) {@link #close()} waits for batches that are not stalled;
 * with any other time source (a virtual clock that nobody may advance any more) it completes
 * what is due and fails the rest, and it always fails stalled batches, so close never hangs.
 *
 * <p>Waiting: with a {@link ManualTimeSource} waiters are woken on every advance; with the wall
 * clock they sleep until the completion time; with another time source they re-check every
 * millisecond of real time.
 */
public final class SimTransferEngine implements TransferEngine {

  private static final long FOREIGN_CLOCK_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** The batches of one direction; guarded by the engine lock. */
  private static final class Lane {
    final TransferDirection direction;
    final String bytesMetric;
    final String latencyMetric;
    final String failuresMetric;
    final ArrayDeque<SimTransferHandle> pending = new ArrayDeque<>();
    long nextSequence;
    long lastModelledCompletion = Long.MIN_VALUE;
    long lastCompletion = Long.MIN_VALUE;

    Lane(TransferDirection direction) {
      this.direction = direction;
      // Built once: metric names are reported per batch and must not allocate there.
      String suffix = direction == TransferDirection.HOST_TO_DEVICE ? "h2d" : "d2h";
      this.bytesMetric = "transfer.bytes." + suffix;
      this.latencyMetric = "transfer.latency." + suffix;
      this.failuresMetric = "transfer.failures." + suffix;
    }
  }

  private final SimPool device;
  private final HostMemory host;
  private final SimBlockCopier copier;
  private final SimTimingModel model;
  private final TimeSource time;
  private final BackendMetrics metrics;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Lane[] lanes;
  private final SimFaults faults;
  private final Runnable clockListener;
  private boolean closed;

  SimTransferEngine(SimPool device, HostMemory host, SimTimingModel model, BackendContext context) {
    this.device = device;
    this.host = host;
    this.copier = new SimBlockCopier(device, host);
    this.model = model;
    this.time = context.time();
    this.metrics = context.metrics();
    this.lanes = new Lane[TransferDirection.values().length];
    for (TransferDirection d : TransferDirection.values()) {
      lanes[d.ordinal()] = new Lane(d);
    }
    this.faults = new SimFaults(this);
    this.clockListener = this::signalChange;
    if (time instanceof ManualTimeSource manual) {
      manual.addListener(clockListener);
    }
  }

  /**
   * The fault injection of this engine.
   *
   * @return the faults; one object per engine
   */
  public SimFaults faults() {
    return faults;
  }

  /**
   * The timing model of this engine's rank.
   *
   * @return the model
   */
  public SimTimingModel timingModel() {
    return model;
  }

  @Override
  public TransferHandle submit(TransferBatch batch) {
    Objects.requireNonNull(batch, "batch");
    long bytes = copier.checkAndMeasure(batch);
    lock.lock();
    try {
      if (closed) {
        throw new IllegalStateException(
            "the sim transfer engine is closed: create a new one with device.transferEngine(host)");
      }
      device.checkOpen();
      // Rules first: a predicate that throws must not leave a gap in the sequence numbers.
      int rule = faults.take(batch);
      Lane lane = lanes[batch.direction().ordinal()];
      long now = time.nanoTime();
      publishDue(lane, now);
      long sequence = lane.nextSequence++;
      long due =
          model.completionNanos(lane.direction, sequence, bytes, now, lane.lastModelledCompletion);
      lane.lastModelledCompletion = due;
      SimTransferHandle.Plan plan =
          rule == SimFaults.FLIP
              ? SimTransferHandle.Plan.FLIP_AND_COPY
              : rule > 0
                  ? SimTransferHandle.Plan.FAIL_INJECTED
                  : rule == 0 && model.randomFailure(lane.direction, sequence)
                      ? SimTransferHandle.Plan.FAIL_RANDOM
                      : rule == 0 && model.randomFlip(lane.direction, sequence)
                          ? SimTransferHandle.Plan.FLIP_AND_COPY
                          : SimTransferHandle.Plan.COPY;
      SimTransferHandle handle =
          new SimTransferHandle(
              this, batch, sequence, bytes, now, due, plan, rule == SimFaults.STALL);
      lane.pending.addLast(handle);
      return handle;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public int inFlight() {
    lock.lock();
    try {
      long now = time.nanoTime();
      int count = 0;
      for (Lane lane : lanes) {
        publishDue(lane, now);
        count += lane.pending.size();
      }
      return count;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops accepting batches and finishes those in flight; see the class note for how this
   * depends on the time source. Idempotent.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      if (time == TimeSource.SYSTEM) {
        waitForUnstalled();
      }
      long now = time.nanoTime();
      for (Lane lane : lanes) {
        publishDue(lane, now);
        while (!lane.pending.isEmpty()) {
          SimTransferHandle h = lane.pending.removeFirst();
          String why =
              h.stalled
                  ? "it was stalled by SimTransferEngine.faults() and never released"
                  : "it was due at " + h.dueNanos + "ns but the time source reads " + now + "ns";
          finish(
              lane,
              h,
              Math.max(now, lane.lastCompletion),
              failure(h, "the engine was closed" + " before the copy completed: " + why));
        }
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    if (time instanceof ManualTimeSource manual) {
      manual.removeListener(clockListener);
    }
  }

  @Override
  public String toString() {
    return "SimTransferEngine[rank=" + model.rank() + ", device=" + device + ", host=" + host + "]";
  }

  // ---- called by SimTransferHandle and SimFaults ----

  void lock() {
    lock.lock();
  }

  void unlock() {
    lock.unlock();
  }

  /** Publishes what is due in the handle's direction; returns whether the handle is done. */
  boolean poll(SimTransferHandle handle) {
    lock.lock();
    try {
      publishDue(lanes[handle.direction().ordinal()], time.nanoTime());
      return handle.done();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until the handle is done or {@code timeoutNanos} of the time source have passed.
   *
   * @return whether the handle is done
   */
  boolean await(SimTransferHandle handle, long timeoutNanos) throws InterruptedException {
    Lane lane = lanes[handle.direction().ordinal()];
    lock.lockInterruptibly();
    try {
      long start = time.nanoTime();
      long deadline =
          timeoutNanos == Long.MAX_VALUE
              ? Long.MAX_VALUE
              : SimTimingModel.saturatedAdd(start, timeoutNanos);
      while (true) {
        long now = time.nanoTime();
        publishDue(lane, now);
        if (handle.done()) {
          return true;
        }
        if (now >= deadline) {
          return false;
        }
        waitUntil(Math.min(nextDue(lane), deadline), now);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Releases stalled batches of one direction, or of both when {@code direction} is null. */
  int release(TransferDirection direction) {
    lock.lock();
    try {
      long now = time.nanoTime();
      int released = 0;
      for (Lane lane : lanes) {
        if (direction != null && lane.direction != direction) {
          continue;
        }
        for (SimTransferHandle h : lane.pending) {
          if (h.stalled) {
            h.stalled = false;
            h.dueNanos = Math.max(h.dueNanos, now);
            released++;
          }
        }
        publishDue(lane, now);
      }
      changed.signalAll();
      return released;
    } finally {
      lock.unlock();
    }
  }

  int stalledCount() {
    lock.lock();
    try {
      int count = 0;
      for (Lane lane : lanes) {
        for (SimTransferHandle h : lane.pending) {
          count += h.stalled ? 1 : 0;
        }
      }
      return count;
    } finally {
      lock.unlock();
    }
  }

  // ---- internals, all under the lock ----

  /** Completes the lane's batches from the head while they are due and not stalled. */
  private void publishDue(Lane lane, long now) {
    boolean any = false;
    for (SimTransferHandle h; (h = lane.pending.peekFirst()) != null; ) {
      // FIFO: a batch never completes before its predecessor, even if modelled earlier.
      long completion = Math.max(h.dueNanos, lane.lastCompletion);
      if (h.stalled || now < completion) {
        break;
      }
      lane.pending.removeFirst();
      finish(lane, h, completion, copyOrFail(h));
      any = true;
    }
    if (any) {
      changed.signalAll();
    }
  }

  private void finish(Lane lane, SimTransferHandle h, long completion, TransferFailedException f) {
    lane.lastCompletion = completion;
    h.complete(f);
    metrics.recordNanos(lane.latencyMetric, completion - h.submitNanos());
    if (f == null) {
      metrics.increment(lane.bytesMetric, h.bytes());
    } else {
      metrics.increment(lane.failuresMetric, 1);
    }
  }

  /** The earliest time the lane's head may complete, or MAX_VALUE while it is stalled. */
  private static long nextDue(Lane lane) {
    SimTransferHandle head = lane.pending.peekFirst();
    if (head == null || head.stalled) {
      return Long.MAX_VALUE;
    }
    return Math.max(head.dueNanos, lane.lastCompletion);
  }

  private void waitUntil(long target, long now) throws InterruptedException {
    if (time instanceof ManualTimeSource) {
      changed.await();
    } else if (time == TimeSource.SYSTEM) {
      if (target == Long.MAX_VALUE) {
        changed.await();
      } else {
        changed.awaitNanos(Math.max(1, target - now));
      }
    } else {
      changed.awaitNanos(Math.max(1, Math.min(FOREIGN_CLOCK_POLL_NANOS, target - now)));
    }
  }

  /** For close() on the wall clock: sleeps until every unstalled batch has completed. */
  private void waitForUnstalled() {
    boolean interrupted = false;
    while (true) {
      long now = time.nanoTime();
      long target = Long.MAX_VALUE;
      for (Lane lane : lanes) {
        publishDue(lane, now);
        target = Math.min(target, nextDue(lane));
      }
      if (target == Long.MAX_VALUE) {
        break;
      }
      try {
        changed.awaitNanos(Math.max(1, target - now));
      } catch (InterruptedException e) {
        interrupted = true;
        break;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private TransferFailedException copyOrFail(SimTransferHandle h) {
    return switch (h.plan()) {
      case FAIL_INJECTED -> failure(h, "failure injected with SimTransferEngine.faults()");
      case FAIL_RANDOM ->
          failure(
              h,
              "random failure drawn with "
                  + SimConfig.FAILURE_PROBABILITY
                  + "="
                  + model.config().failureProbability()
                  + " "
                  + SimConfig.SEED
                  + "="
                  + model.config().seed()
                  + " rank="
                  + model.rank());
      case COPY -> copy(h);
      case FLIP_AND_COPY -> {
        copier.flipSourceBit(h.batch());
        yield copy(h);
      }
    };
  }

  private TransferFailedException copy(SimTransferHandle h) {
    try {
      copier.copy(h.batch());
      return null;
    } catch (RuntimeException e) {
      return new TransferFailedException(
          describe(h)
              + " failed: "
              + e.getMessage()
              + "; close the transfer engine before closing its pools",
          e);
    }
  }

  private TransferFailedException failure(SimTransferHandle h, String why) {
    return new TransferFailedException(
        describe(h) + " failed: " + why + "; the destination pages were not written", null);
  }

  private static String describe(SimTransferHandle h) {
    TransferBatch b = h.batch();
    return "sim "
        + b.direction()
        + " batch seq="
        + h.sequence()
        + " (pages="
        + b.size()
        + (b.layer().isPresent() ? ", layer=" + b.layer().getAsInt() : ", all layers")
        + ", bytes="
        + h.bytes()
        + ")";
  }

  private void signalChange() {
    lock.lock();
    try {
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
