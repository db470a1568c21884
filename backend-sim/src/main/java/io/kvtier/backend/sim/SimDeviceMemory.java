package io.kvtier.backend.sim;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The simulated device (L1) pool: off-heap memory standing in for accelerator memory, with a
 * {@link SimTransferEngine} to any host pool whose copies complete on the {@link SimTimingModel}
 * of this pool's rank.
 */
public final class SimDeviceMemory implements DeviceMemory {

  private final SimPool pool;
  private final SimConfig config;
  private final BackendContext context;

  SimDeviceMemory(PoolSpec spec, SimConfig config, BackendContext context) {
    this.config = Objects.requireNonNull(config, "config");
    this.context = Objects.requireNonNull(context, "context");
    this.pool = new SimPool("device", spec);
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
   * The memory of one (page, layer) block, for a simulated model that reads and writes KV in
   * place. Valid until {@link #close()}.
   *
   * @param page the page
   * @param layer the layer
   * @return a segment of {@code layout.pageBytesPerLayer()} bytes
   */
  public MemorySegment block(int page, int layer) {
    return pool.block(page, layer);
  }

  /**
   * Creates a transfer engine to a host pool of any provider, timed by this rank's model.
   *
   * @param host the host pool; its KV layout must equal this pool's
   * @return a new {@link SimTransferEngine}
   * @throws IllegalArgumentException if the layouts differ
   * @throws IllegalStateException if either pool is closed
   */
  @Override
  public SimTransferEngine transferEngine(HostMemory host) {
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
    return new SimTransferEngine(pool, host, new SimTimingModel(config, context.rank()), context);
  }

  /**
   * The parsed {@code sim.*} config this pool was opened with.
   *
   * @return the config
   */
  public SimConfig config() {
    return config;
  }

  @Override
  public void close() {
    pool.close();
  }

  @Override
  public String toString() {
    return pool + " rank=" + context.rank();
  }
}
