package io.kvtier.backend.sim;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;

/**
 * The simulated host (L2) pool: plain off-heap memory, not pinned. Any device's transfer engine
 * and any L3 store may copy to and from its {@link #block blocks}.
 */
public final class SimHostMemory implements HostMemory {

  private final SimPool pool;

  SimHostMemory(PoolSpec spec) {
    this.pool = new SimPool("host", spec);
  }

  SimPool pool() {
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
   * Always false: simulated host memory is ordinary memory.
   *
   * @return false
   */
  @Override
  public boolean pinned() {
    return false;
  }

  @Override
  public void close() {
    pool.close();
  }

  @Override
  public String toString() {
    return pool.toString();
  }
}
