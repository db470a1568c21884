package io.kvtier.testkit.conformance;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A host pool of no provider at all: the "foreign" host pool with which the device suite checks
 * {@link TransferCapability#FOREIGN_HOST}. Kept minimal on purpose; it is not a reference
 * implementation.
 */
final class ArenaHostMemory implements HostMemory {
  private final PoolSpec spec;
  private final Arena arena = Arena.ofShared();
  private final MemorySegment memory;
  private volatile boolean closed;

  ArenaHostMemory(PoolSpec spec) {
    this.spec = Objects.requireNonNull(spec, "spec");
    this.memory = arena.allocate(spec.bytes(), 64);
  }

  @Override
  public PoolSpec spec() {
    return spec;
  }

  @Override
  public MemorySegment block(int page, int layer) {
    if (closed) {
      throw new IllegalStateException("ArenaHostMemory is closed");
    }
    if (page < 0 || page >= spec.pages() || layer < 0 || layer >= spec.layout().layers()) {
      throw new IndexOutOfBoundsException(
          "page="
              + page
              + " pages="
              + spec.pages()
              + " layer="
              + layer
              + " layers="
              + spec.layout().layers());
    }
    long size = spec.layout().pageBytesPerLayer();
    return memory.asSlice(
        spec.memoryLayout().blockOffset(spec.layout(), spec.pages(), page, layer), size);
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
  public void close() {
    if (!closed) {
      closed = true;
      arena.close();
    }
  }
}
