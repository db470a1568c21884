package io.kvtier.backend.cuda;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The {@code cuda} device (L1) pool: one plain device allocation ({@code cuMemAlloc}, never
 * managed memory) of {@code spec.bytes()}, addressed by {@link
 * io.kvtier.spi.MemoryLayout#blockOffset}.
 *
 * <p>{@link #read} and {@link #write} are for the model and return once the bytes have arrived:
 * they copy on a stream of the pool's own and wait for it, because a plain {@code cuMemcpyHtoD}
 * from pageable memory may return before its DMA lands, and the transfer engine's streams do not
 * wait for the legacy default stream. Closing the pool closes its transfer engines first (waiting
 * for their copies), so no copy outlives the memory.
 */
final class CudaDeviceMemory implements DeviceMemory {

  private final CudaContext context;
  private final CudaPoolAddressing addressing;
  private final CudaConfig config;
  private final BackendContext backend;
  private final CUdeviceptr base = new CUdeviceptr();
  private final CUstream stream = new CUstream();
  private final Set<CudaTransferEngine> engines = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  private CudaDeviceMemory(
      PoolSpec spec, CudaConfig config, BackendContext backend, CudaContext context) {
    this.context = context;
    this.config = config;
    this.backend = backend;
    this.addressing = new CudaPoolAddressing("device", spec);
    CudaDriver.check(
        "cuStreamCreate",
        () -> JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING));
    long bytes = spec.bytes();
    int allocated = CudaDriver.result(() -> JCudaDriver.cuMemAlloc(base, bytes));
    if (allocated != CudaDriver.SUCCESS) {
      JCudaDriver.cuStreamDestroy(stream);
      String what =
          "cannot allocate the cuda device pool of bytes="
              + bytes
              + " (pages="
              + spec.pages()
              + " x pageBytes="
              + spec.layout().pageBytes()
              + ") on "
              + context
              + ": cuMemAlloc returned "
              + CudaDriver.name(allocated)
              + ", "
              + context.memoryInfo();
      if (allocated == CudaDriver.OUT_OF_MEMORY) {
        throw new IllegalArgumentException(what + "; use fewer pages");
      }
      throw new CudaDriverException(what, allocated);
    }
    try {
      CudaDriver.check(
          "cuMemsetD8Async(device pool)",
          () -> JCudaDriver.cuMemsetD8Async(base, (byte) 0, bytes, stream));
      CudaDriver.check("cuStreamSynchronize", () -> JCudaDriver.cuStreamSynchronize(stream));
    } catch (RuntimeException e) {
      JCudaDriver.cuMemFree(base);
      JCudaDriver.cuStreamDestroy(stream);
      throw e;
    }
  }

  /**
   * Opens a zero-filled device pool on the GPU of {@code config.device()}.
   *
   * @param spec the pool's shape
   * @param config the parsed {@code cuda.*} keys
   * @param backend the engine's context (time source, metrics)
   * @return the pool
   * @throws IllegalArgumentException if the GPU cannot hold the pool, or there is no such GPU
   * @throws IllegalStateException if JCuda or the driver cannot start
   */
  static DeviceMemory open(PoolSpec spec, CudaConfig config, BackendContext backend) {
    return new CudaDeviceMemory(spec, config, backend, CudaContext.of(config.device()));
  }

  @Override
  public PoolSpec spec() {
    return addressing.spec();
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    Objects.requireNonNull(src, "src");
    checkOpen();
    long at = addressing.rangeOffset(page, layer, offset, src.byteSize());
    long length = src.byteSize();
    if (length == 0) {
      return;
    }
    context.makeCurrent();
    CudaStaging.from(
        src,
        address -> {
          CudaDriver.check(
              "cuMemcpyHtoDAsync(device pool write)",
              () ->
                  JCudaDriver.cuMemcpyHtoDAsync(
                      base.withByteOffset(at), CudaHostPointer.at(address), length, stream));
          CudaDriver.check("cuStreamSynchronize", () -> JCudaDriver.cuStreamSynchronize(stream));
        });
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    Objects.requireNonNull(dst, "dst");
    checkOpen();
    long at = addressing.rangeOffset(page, layer, offset, dst.byteSize());
    long length = dst.byteSize();
    if (length == 0) {
      return;
    }
    context.makeCurrent();
    CudaStaging.into(
        dst,
        address -> {
          CudaDriver.check(
              "cuMemcpyDtoHAsync(device pool read)",
              () ->
                  JCudaDriver.cuMemcpyDtoHAsync(
                      CudaHostPointer.at(address), base.withByteOffset(at), length, stream));
          CudaDriver.check("cuStreamSynchronize", () -> JCudaDriver.cuStreamSynchronize(stream));
        });
  }

  /**
   * Creates the engine that copies between this pool and a pinned host pool of the {@code cuda}
   * host provider.
   *
   * @param host a pool opened by {@link CudaHostMemoryProvider}, with this pool's KV layout
   * @return a new engine with one stream per direction
   * @throws IllegalArgumentException if the host pool is of another provider or layout
   * @throws IllegalStateException if either pool is closed
   */
  @Override
  public TransferEngine transferEngine(HostMemory host) {
    Objects.requireNonNull(host, "host");
    checkOpen();
    if (!(host instanceof CudaHostMemory pinned)) {
      throw new IllegalArgumentException(
          "the cuda device copies only to and from pinned host pools of the cuda host provider,"
              + " but got "
              + host.getClass().getName()
              + " (pinned="
              + host.pinned()
              + "): open"
              + " the host pool with the cuda HostMemoryProvider (kvtier.host=cuda)");
    }
    pinned.checkOpen();
    if (!host.spec().layout().equals(spec().layout())) {
      throw new IllegalArgumentException(
          "host layout="
              + host.spec().layout()
              + " differs from device layout="
              + spec().layout()
              + ": open both pools with the same KvLayout");
    }
    CudaTransferEngine engine = new CudaTransferEngine(this, pinned, config, backend);
    engines.add(engine);
    pinned.register(engine);
    return engine;
  }

  CudaContext context() {
    return context;
  }

  CudaPoolAddressing addressing() {
    return addressing;
  }

  CUdeviceptr base() {
    return base;
  }

  void unregister(CudaTransferEngine engine) {
    engines.remove(engine);
  }

  void checkOpen() {
    if (closed) {
      throw new IllegalStateException(
          "the cuda device pool is closed: open a new one instead of using it after close()");
    }
  }

  /**
   * Closes the pool's transfer engines (waiting for their copies), then frees the memory.
   * Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (CudaTransferEngine engine : List.copyOf(engines)) {
      engine.close();
    }
    context.makeCurrent();
    try {
      CudaDriver.check("cuMemFree(device pool)", () -> JCudaDriver.cuMemFree(base));
    } finally {
      CudaDriver.check("cuStreamDestroy", () -> JCudaDriver.cuStreamDestroy(stream));
    }
  }

  @Override
  public String toString() {
    return "cuda device pool[pages="
        + spec().pages()
        + ", bytes="
        + spec().bytes()
        + ", "
        + spec().memoryLayout()
        + ", "
        + context
        + (closed ? ", closed" : "")
        + "]";
  }
}
