package io.kvtier.backend.sim;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.MemorySegment;

/**
 * A host pool of another "provider" than sim, on the Java heap, always page-first: shows that the
 * sim transfer engine accepts any {@link HostMemory} through {@link #block}.
 */
final class HeapHostMemory implements HostMemory {

  private final PoolSpec spec;
  private final MemorySegment memory;

  HeapHostMemory(PoolSpec spec) {
    this.spec = spec;
    this.memory = MemorySegment.ofArray(new byte[Math.toIntExact(spec.bytes())]);
  }

  @Override
  public PoolSpec spec() {
    return spec;
  }

  @Override
  public MemorySegment block(int page, int layer) {
    long blockBytes = spec.layout().pageBytesPerLayer();
    return memory.asSlice(((long) page * spec.layout().layers() + layer) * blockBytes, blockBytes);
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    MemorySegment.copy(src, 0, block(page, layer), offset, src.byteSize());
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    MemorySegment.copy(block(page, layer), offset, dst, 0, dst.byteSize());
  }

  @Override
  public boolean pinned() {
    return false;
  }

  @Override
  public void close() {}
}
