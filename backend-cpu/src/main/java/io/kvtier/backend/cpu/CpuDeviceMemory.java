package io.kvtier.backend.cpu;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The {@code cpu} device (L1) pool: the off-heap RAM where a model running on the CPU reads and
 * writes attention KV, with a {@link CpuTransferEngine} to any host pool.
 */
public final class CpuDeviceMemory implements DeviceMemory {

  private final CpuPool pool;
  private final CpuConfig config;
  private final BackendContext context;

  CpuDeviceMemory(PoolSpec spec, CpuConfig config, BackendContext context) {
    this.config = Objects.requireNonNull(config, "config");
    this.context = Objects.requireNonNull(context, "context");
    this.pool = new CpuPool("device", spec);
  }

  CpuPool pool() {
    return pool;
  }

  @Override
  public PoolSpec spec() {
    return pool.spec();
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    pool.write(page, layer, offset, src);
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    pool.read(page, layer, offset, dst);
  }

  /**
   * The memory of one (page, layer) block, for a model that reads and writes KV in place. Valid
   * until {@link #close()}.
   *
   * @param page the page
   * @param layer the layer
   * @return a segment of {@code layout.pageBytesPerLayer()} bytes
   */
  public MemorySegment block(int page, int layer) {
    return pool.block(page, layer);
  }

  /**
   * Creates a transfer engine to a host pool of any provider; a {@code cpu} host pool is copied
   * to directly, any other through {@link HostMemory#block}.
   *
   * @param host the host pool; its KV layout must equal this pool's
   * @return a new engine with {@link CpuConfig#copyThreads()} copier threads
   * @throws IllegalArgumentException if the layouts differ
   * @throws IllegalStateException if this pool or a {@code cpu} host pool is closed
   */
  @Override
  public CpuTransferEngine transferEngine(HostMemory host) {
    Objects.requireNonNull(host, "host");
    pool.checkOpen();
    if (!host.spec().layout().equals(spec().layout())) {
      throw new IllegalArgumentException(
          "host layout="
              + host.spec().layout()
              + " differs from device layout="
              + spec().layout()
              + ": open both pools with the same KvLayout");
    }
    if (host instanceof CpuHostMemory cpuHost) {
      cpuHost.pool().checkOpen();
    }
    return new CpuTransferEngine(pool, host, config, context);
  }

  /**
   * The parsed {@code cpu.*} config this pool was opened with.
   *
   * @return the config
   */
  public CpuConfig config() {
    return config;
  }

  /** Closes this pool's transfer engines (waiting for their copies), then frees the memory. */
  @Override
  public void close() {
    pool.close();
  }

  @Override
  public String toString() {
    return pool.toString();
  }
}
