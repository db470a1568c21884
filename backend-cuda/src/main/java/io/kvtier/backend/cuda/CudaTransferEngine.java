package io.kvtier.backend.cuda;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.util.List;
import java.util.Objects;

/**
 * Asynchronous page copies between a {@code cuda} device pool and a pinned {@code cuda} host pool:
 * one {@link CudaLane} (stream) per direction, so the two directions overlap on GPUs with two copy
 * engines and each completes in submission order.
 *
 * <p>A batch is planned by {@link CudaCopyPlanner} into the fewest contiguous (or, unless {@code
 * cuda.strided-copies=false}, strided) runs, which are enqueued with {@code cuMemcpyHtoDAsync},
 * {@code cuMemcpyDtoHAsync} or {@code cuMemcpy2DAsync}, followed by one event. A load-back submits
 * one batch per layer, so each layer has its own event.
 *
 * <p>Threading: {@link #submit}, {@link #inFlight} and the handles' methods may be called from any
 * thread; each makes the device's context current first. {@link #close()} waits for both streams.
 */
final class CudaTransferEngine implements TransferEngine {

  private final CudaDeviceMemory device;
  private final CudaHostMemory host;
  private final long maxPitch;
  private final CudaLane hostToDevice;
  private final CudaLane deviceToHost;
  private volatile boolean closed;

  CudaTransferEngine(
      CudaDeviceMemory device, CudaHostMemory host, CudaConfig config, BackendContext backend) {
    this.device = device;
    this.host = host;
    CudaContext context = device.context();
    this.maxPitch = config.stridedCopies() ? context.maxPitch() : 0;
    this.hostToDevice =
        new CudaLane(
            TransferDirection.HOST_TO_DEVICE, context, device.base(), host.address(), backend);
    try {
      this.deviceToHost =
          new CudaLane(
              TransferDirection.DEVICE_TO_HOST, context, device.base(), host.address(), backend);
    } catch (RuntimeException e) {
      hostToDevice.close();
      throw e;
    }
  }

  @Override
  public TransferHandle submit(TransferBatch batch) {
    Objects.requireNonNull(batch, "batch");
    long bytes = CudaPoolAddressing.checkAndMeasure(batch, device.addressing(), host.addressing());
    if (closed) {
      throw new IllegalStateException(
          "the cuda transfer engine is closed: create a new one with"
              + " device.transferEngine(host)");
    }
    device.checkOpen();
    host.checkOpen();
    List<CudaCopyRun> runs = CudaCopyPlanner.plan(batch, device.spec(), host.spec(), maxPitch);
    return lane(batch.direction()).submit(batch, runs, bytes);
  }

  @Override
  public int inFlight() {
    return hostToDevice.inFlight() + deviceToHost.inFlight();
  }

  /**
   * Stops accepting batches, waits until both streams have run every copy, and releases the
   * streams and events. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      hostToDevice.close();
    } finally {
      try {
        deviceToHost.close();
      } finally {
        device.unregister(this);
        host.unregister(this);
      }
    }
  }

  private CudaLane lane(TransferDirection direction) {
    return direction == TransferDirection.HOST_TO_DEVICE ? hostToDevice : deviceToHost;
  }

  @Override
  public String toString() {
    return "CudaTransferEngine[device="
        + device
        + ", host="
        + host
        + ", strided copies "
        + (maxPitch > 0 ? "up to pitch " + maxPitch : "off")
        + "]";
  }
}
