package io.kvtier.backend.cpu;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.CopyCheck;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Asynchronous page copies between a {@code cpu} device pool and a host pool: real memory copies
 * on {@link CpuConfig#copyThreads()} copier threads of this engine, with no modelled delay, so a
 * load-back costs what copying its bytes costs.
 *
 * <p>Each direction is a {@link CpuCopyLane}: its batches are copied one at a time in submission
 * order and complete in that order; the two directions are independent (on two threads they run
 * at once). {@link #submit} checks the batch, queues it and returns; it never copies on the
 * caller's thread. {@link #close()} stops accepting batches, waits until every queued batch has
 * been copied (or has failed) and stops the threads. A copy that throws (a host pool of another
 * provider closed under the engine) fails its batch with {@link
 * io.kvtier.spi.TransferFailedException}; later batches still run.
 */
public final class CpuTransferEngine implements TransferEngine {

  private static final AtomicInteger ENGINES = new AtomicInteger();

  /** How long an idle copier thread lives; the next batch after that starts a new one. */
  private static final long IDLE_SECONDS = 60;

  private final CpuPool device;
  private final HostMemory host;
  private final CpuBlockCopier copier;
  private final ExecutorService threads;
  private final CpuCopyLane hostToDevice;
  private final CpuCopyLane deviceToHost;
  private volatile boolean closed;

  CpuTransferEngine(CpuPool device, HostMemory host, CpuConfig config, BackendContext context) {
    this.device = device;
    this.host = host;
    this.copier = new CpuBlockCopier(device, host);
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            config.copyThreads(),
            config.copyThreads(),
            IDLE_SECONDS,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            copierThreads(ENGINES.incrementAndGet(), context.rank()));
    // An engine that copies nothing for a while (or was forgotten) holds no thread.
    pool.allowCoreThreadTimeOut(true);
    this.threads = pool;
    // Fewer threads than directions: the lanes share a thread and must take turns.
    boolean handBack = config.copyThreads() < TransferDirection.values().length;
    this.hostToDevice =
        new CpuCopyLane(
            TransferDirection.HOST_TO_DEVICE,
            copier,
            threads,
            handBack,
            context.time(),
            context.metrics());
    this.deviceToHost =
        new CpuCopyLane(
            TransferDirection.DEVICE_TO_HOST,
            copier,
            threads,
            handBack,
            context.time(),
            context.metrics());
    device.register(this);
    if (host instanceof CpuHostMemory cpuHost) {
      try {
        cpuHost.pool().register(this);
      } catch (IllegalStateException e) {
        device.unregister(this);
        throw e;
      }
    }
  }

  @Override
  public TransferHandle submit(TransferBatch batch) {
    return enqueue(batch, null);
  }

  /** Runs {@code check} on the copier thread, right after the copy and before completion. */
  @Override
  public TransferHandle submit(TransferBatch batch, CopyCheck check) {
    return enqueue(batch, Objects.requireNonNull(check, "check"));
  }

  /** Checks and queues a batch on its direction's lane, with its check or null. */
  private TransferHandle enqueue(TransferBatch batch, CopyCheck check) {
    Objects.requireNonNull(batch, "batch");
    long bytes = copier.checkAndMeasure(batch);
    if (closed) {
      throw closedException();
    }
    device.checkOpen();
    return lane(batch.direction()).submit(batch, bytes, check);
  }

  @Override
  public int inFlight() {
    return hostToDevice.inFlight() + deviceToHost.inFlight();
  }

  /**
   * Stops accepting batches, waits until every batch in flight has been copied or has failed,
   * and stops the copier threads. Idempotent; not to be called from a copier thread.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean interrupted = false;
    try {
      hostToDevice.close();
      deviceToHost.close();
      threads.shutdown();
      // The last drain task returns right after completing its batch: this wait is short.
      while (true) {
        try {
          if (threads.awaitTermination(1, TimeUnit.SECONDS)) {
            break;
          }
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      device.unregister(this);
      if (host instanceof CpuHostMemory cpuHost) {
        cpuHost.pool().unregister(this);
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  static IllegalStateException closedException() {
    return new IllegalStateException(
        "the cpu transfer engine is closed: create a new one with device.transferEngine(host)");
  }

  private CpuCopyLane lane(TransferDirection direction) {
    return direction == TransferDirection.HOST_TO_DEVICE ? hostToDevice : deviceToHost;
  }

  private static ThreadFactory copierThreads(int engine, int rank) {
    AtomicInteger count = new AtomicInteger();
    return task -> {
      Thread t =
          new Thread(
              task, "kvtier-cpu-copy-r" + rank + "-e" + engine + "-" + count.incrementAndGet());
      // A forgotten engine must not keep the JVM alive.
      t.setDaemon(true);
      return t;
    };
  }

  @Override
  public String toString() {
    return "CpuTransferEngine[device="
        + device
        + ", host="
        + host
        + (closed ? ", closed" : "")
        + "]";
  }
}
