package io.kvtier.backend.cpu;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;

/**
 * The {@code cpu} host (L2) pool: plain off-heap RAM, not pinned (there is no device that needs
 * pinned memory). Any device's transfer engine and any L3 store may copy to and from its {@link
 * #block blocks}.
 */
public final class CpuHostMemory implements HostMemory {

  private final CpuPool pool;

  CpuHostMemory(PoolSpec spec) {
    this.pool = new CpuPool("host", spec);
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

  @Override
  public MemorySegment block(int page, int layer) {
    return pool.block(page, layer);
  }

  /**
   * Always false: ordinary memory, which the CPU copies from as fast as from any other.
   *
   * @return false
   */
  @Override
  public boolean pinned() {
    return false;
  }

  /** Closes the {@code cpu} transfer engines that copy to this pool, then frees the memory. */
  @Override
  public void close() {
    pool.close();
  }

  @Override
  public String toString() {
    return pool.toString();
  }
}
