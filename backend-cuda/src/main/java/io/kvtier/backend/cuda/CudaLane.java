package io.kvtier.backend.cuda;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferFailedException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantLock;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUmemorytype;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The copies of one direction: one stream, and the batches submitted to it in order.
 *
 * <p>Design note. FIFO completion follows from the single stream: a batch's copies are enqueued
 * on the stream, then an event is recorded after them, and the stream runs them in order. A batch
 * is done when its event has completed ({@code cuEventQuery} returns {@code CUDA_SUCCESS}) and it
 * is at the head of the pending queue; {@link #poll()} walks the queue from the head and stops at
 * the first event that is not ready, so no handle is ever done before an earlier one. Events are
 * recycled (created without timing, which makes recording and querying cheaper).
 *
 * <p>Locks: {@code submitLock} orders submissions (sequence numbers, stream order, queue order);
 * {@code pollLock} guards the queue. A poll never waits for a submission that is enqueueing a
 * large batch, so a model thread polling layer {@code i} is not held up by layer {@code i + 1}.
 *
 * <p>A failed driver call while enqueueing fails that batch (its copies enqueued so far still
 * complete before its event, so its pages are not in use once it reports done); an event that
 * completes with an error fails its batch. Either way the lane keeps going for later batches.
 */
final class CudaLane {

  private static final System.Logger LOG = System.getLogger(CudaLane.class.getName());

  private final TransferDirection direction;
  private final CudaContext context;
  private final CUdeviceptr deviceBase;
  private final long hostBase;
  private final TimeSource time;
  private final BackendMetrics metrics;
  private final String bytesMetric;
  private final String latencyMetric;
  private final String failuresMetric;
  private final String copiesMetric;
  private final CUstream stream = new CUstream();
  private final ReentrantLock submitLock = new ReentrantLock();
  private final ReentrantLock pollLock = new ReentrantLock();
  private final ArrayDeque<CudaTransferHandle> pending = new ArrayDeque<>();
  private final ConcurrentLinkedQueue<CUevent> idleEvents = new ConcurrentLinkedQueue<>();
  private long nextSequence;
  private boolean stridedFailed;
  private boolean closed;

  CudaLane(
      TransferDirection direction,
      CudaContext context,
      CUdeviceptr deviceBase,
      long hostBase,
      BackendContext backend) {
    this.direction = direction;
    this.context = context;
    this.deviceBase = deviceBase;
    this.hostBase = hostBase;
    this.time = backend.time();
    this.metrics = backend.metrics();
    String suffix = direction == TransferDirection.HOST_TO_DEVICE ? "h2d" : "d2h";
    this.bytesMetric = "transfer.bytes." + suffix;
    this.latencyMetric = "transfer.latency." + suffix;
    this.failuresMetric = "transfer.failures." + suffix;
    this.copiesMetric = "transfer.copies." + suffix;
    context.makeCurrent();
    CudaDriver.check(
        "cuStreamCreate(" + suffix + ")",
        () -> JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING));
  }

  TimeSource time() {
    return time;
  }

  /**
   * Enqueues a batch's runs and records its event.
   *
   * @param batch the batch, already checked against both pools
   * @param runs its planned copies
   * @param bytes the bytes it copies
   * @return the handle
   * @throws IllegalStateException if the lane is closed
   */
  CudaTransferHandle submit(TransferBatch batch, List<CudaCopyRun> runs, long bytes) {
    submitLock.lock();
    try {
      if (closed) {
        throw new IllegalStateException(
            "the cuda transfer engine is closed: create a new one"
                + " with device.transferEngine(host)");
      }
      long sequence = nextSequence++;
      long submitted = time.nanoTime();
      RuntimeException failure = null;
      int calls = 0;
      try {
        context.makeCurrent();
        for (CudaCopyRun run : runs) {
          calls += enqueue(run);
        }
      } catch (RuntimeException e) {
        // The batch fails, but keeps its sequence number and its place in the queue.
        failure = e;
      }
      CUevent event = null;
      try {
        event = record();
      } catch (CudaDriverException e) {
        failure = failure == null ? e : failure;
        // Without an event nothing tells when the copies enqueued so far are done: wait here.
        CudaDriver.result(() -> JCudaDriver.cuStreamSynchronize(stream));
      }
      CudaTransferHandle handle =
          new CudaTransferHandle(
              this,
              batch,
              sequence,
              bytes,
              submitted,
              event,
              failure == null ? null : failed(batch, sequence, bytes, failure));
      pollLock.lock();
      try {
        pending.addLast(handle);
      } finally {
        pollLock.unlock();
      }
      metrics.increment(copiesMetric, calls);
      return handle;
    } finally {
      submitLock.unlock();
    }
  }

  /** Completes the batches at the head of the queue whose events have completed. */
  void poll() {
    pollLock.lock();
    try {
      if (pending.isEmpty()) {
        return;
      }
      // A context that cannot be made current is gone, and its copies with it: the queries then
      // fail the batches rather than leave their waiters hanging.
      int current = context.trySetCurrent();
      for (CudaTransferHandle head; (head = pending.peekFirst()) != null; ) {
        TransferFailedException failure = head.submitFailure();
        CUevent event = head.event();
        if (event != null) {
          int result =
              current == CudaDriver.SUCCESS
                  ? CudaDriver.result(() -> JCudaDriver.cuEventQuery(event))
                  : current;
          if (result == CudaDriver.NOT_READY) {
            return;
          }
          if (result == CudaDriver.SUCCESS) {
            idleEvents.add(event);
          } else {
            CudaDriver.result(() -> JCudaDriver.cuEventDestroy(event));
            failure =
                failed(
                    head.batch(),
                    head.sequence(),
                    head.bytes(),
                    CudaDriver.failure("cuEventQuery", result));
          }
        }
        pending.removeFirst();
        finish(head, failure);
      }
    } finally {
      pollLock.unlock();
    }
  }

  /**
   * Batches submitted and not yet done.
   *
   * @return the count after a poll
   */
  int inFlight() {
    poll();
    pollLock.lock();
    try {
      return pending.size();
    } finally {
      pollLock.unlock();
    }
  }

  /**
   * Rejects further batches, waits for the stream, completes every batch, and destroys the
   * stream and the events. Idempotent.
   */
  void close() {
    submitLock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      int current = context.trySetCurrent();
      int synced =
          current != CudaDriver.SUCCESS
              ? current
              : CudaDriver.result(() -> JCudaDriver.cuStreamSynchronize(stream));
      poll();
      pollLock.lock();
      try {
        for (CudaTransferHandle h; (h = pending.pollFirst()) != null; ) {
          finish(
              h,
              failed(
                  h.batch(),
                  h.sequence(),
                  h.bytes(),
                  CudaDriver.failure("cuStreamSynchronize while closing the engine", synced)));
        }
      } finally {
        pollLock.unlock();
      }
      for (CUevent e; (e = idleEvents.poll()) != null; ) {
        CUevent event = e;
        CudaDriver.result(() -> JCudaDriver.cuEventDestroy(event));
      }
      CudaDriver.check("cuStreamDestroy", () -> JCudaDriver.cuStreamDestroy(stream));
    } finally {
      submitLock.unlock();
    }
  }

  private void finish(CudaTransferHandle h, TransferFailedException failure) {
    h.complete(failure);
    metrics.recordNanos(latencyMetric, time.nanoTime() - h.submitNanos());
    if (failure == null) {
      metrics.increment(bytesMetric, h.bytes());
    } else {
      metrics.increment(failuresMetric, 1);
    }
  }

  private CUevent record() {
    CUevent event = idleEvents.poll();
    if (event == null) {
      CUevent created = new CUevent();
      CudaDriver.check(
          "cuEventCreate",
          () -> JCudaDriver.cuEventCreate(created, CUevent_flags.CU_EVENT_DISABLE_TIMING));
      event = created;
    }
    CUevent recorded = event;
    int result = CudaDriver.result(() -> JCudaDriver.cuEventRecord(recorded, stream));
    if (result != CudaDriver.SUCCESS) {
      CudaDriver.result(() -> JCudaDriver.cuEventDestroy(recorded));
      throw CudaDriver.failure("cuEventRecord", result);
    }
    return event;
  }

  /** Enqueues one run; returns the number of driver copy calls it took. */
  private int enqueue(CudaCopyRun run) {
    if (run.isContiguous()) {
      copy(run.deviceOffset(), run.hostOffset(), run.width());
      return 1;
    }
    if (!stridedFailed) {
      int result = CudaDriver.result(() -> JCudaDriver.cuMemcpy2DAsync(strided(run), stream));
      if (result == CudaDriver.SUCCESS) {
        return 1;
      }
      // A driver that rejects a pitch it reported as allowed must not fail the batch: copy the
      // rows one by one, now and from now on.
      stridedFailed = true;
      LOG.log(
          System.Logger.Level.WARNING,
          "cuMemcpy2DAsync returned {0} for {1} on {2};"
              + " copying strided runs row by row from now on (set cuda.strided-copies=false to"
              + " skip the attempt)",
          CudaDriver.name(result),
          run,
          context);
    }
    for (long row = 0; row < run.height(); row++) {
      copy(
          run.deviceOffset() + row * run.devicePitch(),
          run.hostOffset() + row * run.hostPitch(),
          run.width());
    }
    return Math.toIntExact(run.height());
  }

  private void copy(long deviceOffset, long hostOffset, long bytes) {
    CUdeviceptr device = deviceBase.withByteOffset(deviceOffset);
    CudaHostPointer host = CudaHostPointer.at(hostBase + hostOffset);
    if (direction == TransferDirection.HOST_TO_DEVICE) {
      CudaDriver.check(
          "cuMemcpyHtoDAsync", () -> JCudaDriver.cuMemcpyHtoDAsync(device, host, bytes, stream));
    } else {
      CudaDriver.check(
          "cuMemcpyDtoHAsync", () -> JCudaDriver.cuMemcpyDtoHAsync(host, device, bytes, stream));
    }
  }

  private CUDA_MEMCPY2D strided(CudaCopyRun run) {
    CUDA_MEMCPY2D copy = new CUDA_MEMCPY2D();
    CUdeviceptr device = deviceBase.withByteOffset(run.deviceOffset());
    CudaHostPointer host = CudaHostPointer.at(hostBase + run.hostOffset());
    if (direction == TransferDirection.HOST_TO_DEVICE) {
      copy.srcMemoryType = CUmemorytype.CU_MEMORYTYPE_HOST;
      copy.srcHost = host;
      copy.srcPitch = run.hostPitch();
      copy.dstMemoryType = CUmemorytype.CU_MEMORYTYPE_DEVICE;
      copy.dstDevice = device;
      copy.dstPitch = run.devicePitch();
    } else {
      copy.srcMemoryType = CUmemorytype.CU_MEMORYTYPE_DEVICE;
      copy.srcDevice = device;
      copy.srcPitch = run.devicePitch();
      copy.dstMemoryType = CUmemorytype.CU_MEMORYTYPE_HOST;
      copy.dstHost = host;
      copy.dstPitch = run.hostPitch();
    }
    copy.WidthInBytes = run.width();
    copy.Height = run.height();
    return copy;
  }

  private TransferFailedException failed(
      TransferBatch batch, long sequence, long bytes, RuntimeException cause) {
    return new TransferFailedException(
        "cuda "
            + direction
            + " batch seq="
            + sequence
            + " (pages="
            + batch.size()
            + (batch.layer().isPresent() ? ", layer=" + batch.layer().getAsInt() : ", all layers")
            + ", bytes="
            + bytes
            + ") on "
            + context
            + " failed: "
            + cause.getMessage()
            + "; the destination pages hold undefined bytes",
        cause);
  }
}
