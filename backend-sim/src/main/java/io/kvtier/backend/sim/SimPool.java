package io.kvtier.backend.sim;

import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The off-heap memory behind a simulated device or host pool: one shared {@link Arena} per pool,
 * so that transfer engines and the model may touch blocks from any thread, freed on {@link
 * #close()}. Blocks are addressed with {@link io.kvtier.spi.MemoryLayout#blockOffset}.
 */
final class SimPool implements AutoCloseable {

  /** Cache-line alignment, so that a block copy never straddles more lines than it must. */
  private static final long ALIGNMENT = 64;

  private final String kind;
  private final PoolSpec spec;
  private final long blockBytes;
  private final Arena arena;
  private final MemorySegment memory;
  private volatile boolean closed;

  /**
   * Allocates a zero-filled pool.
   *
   * @param kind "device" or "host", for messages
   * @param spec the shape
   * @throws IllegalArgumentException if the JVM cannot allocate the pool's bytes
   */
  SimPool(String kind, PoolSpec spec) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.spec = Objects.requireNonNull(spec, "spec");
    this.blockBytes = spec.layout().pageBytesPerLayer();
    long limit = SimMemoryLimit.bytes().orElse(Long.MAX_VALUE);
    if (spec.bytes() > limit) {
      throw new IllegalArgumentException(
          "the sim "
              + kind
              + " pool of bytes="
              + spec.bytes()
              + " (pages="
              + spec.pages()
              + " x pageBytes="
              + spec.layout().pageBytes()
              + ") exceeds this machine's memory of "
              + limit
              + " bytes ("
              + SimMemoryLimit.source()
              + "): use fewer pages");
    }
    Arena shared = Arena.ofShared();
    try {
      this.memory = shared.allocate(spec.bytes(), ALIGNMENT);
    } catch (OutOfMemoryError | IllegalArgumentException e) {
      shared.close();
      throw new IllegalArgumentException(
          "cannot allocate the sim "
              + kind
              + " pool of bytes="
              + spec.bytes()
              + " (pages="
              + spec.pages()
              + " x pageBytes="
              + spec.layout().pageBytes()
              + "): "
              + e.getMessage()
              + "; use fewer pages or raise the JVM's off-heap limit (-XX:MaxDirectMemorySize)",
          e);
    }
    this.arena = shared;
  }

  PoolSpec spec() {
    return spec;
  }

  /** The whole pool, for copies that address blocks with {@link #blockOffset}. */
  MemorySegment memory() {
    checkOpen();
    return memory;
  }

  /**
   * The memory of one block.
   *
   * @param page the page
   * @param layer the layer
   * @return a slice of {@code blockBytes} bytes
   */
  MemorySegment block(int page, int layer) {
    return memory.asSlice(blockOffset(page, layer), blockBytes);
  }

  void write(int page, int layer, long offset, MemorySegment src) {
    Objects.requireNonNull(src, "src");
    long base = blockOffset(page, layer);
    checkRange(offset, src.byteSize());
    MemorySegment.copy(src, 0, memory, base + offset, src.byteSize());
  }

  void read(int page, int layer, long offset, MemorySegment dst) {
    Objects.requireNonNull(dst, "dst");
    long base = blockOffset(page, layer);
    checkRange(offset, dst.byteSize());
    MemorySegment.copy(memory, base + offset, dst, 0, dst.byteSize());
  }

  /**
   * Checks a (page, layer) address and returns its offset.
   *
   * @throws IllegalStateException if the pool is closed
   * @throws IndexOutOfBoundsException naming the value and the bound
   */
  long blockOffset(int page, int layer) {
    checkOpen();
    checkPage(page);
    checkLayer(layer);
    return spec.memoryLayout().blockOffset(spec.layout(), spec.pages(), page, layer);
  }

  void checkPage(int page) {
    if (page < 0 || page >= spec.pages()) {
      throw new IndexOutOfBoundsException(
          kind + " page=" + page + " pages=" + spec.pages() + ": use 0 <= page < pages");
    }
  }

  void checkLayer(int layer) {
    if (layer < 0 || layer >= spec.layout().layers()) {
      throw new IndexOutOfBoundsException(
          kind
              + " layer="
              + layer
              + " layers="
              + spec.layout().layers()
              + ": use 0 <= layer < layers");
    }
  }

  void checkOpen() {
    if (closed) {
      throw new IllegalStateException(
          "the sim " + kind + " pool is closed: open a new one instead of using it after close()");
    }
  }

  private void checkRange(long offset, long length) {
    if (offset < 0 || offset > blockBytes - length) {
      throw new IndexOutOfBoundsException(
          kind
              + " offset="
              + offset
              + " length="
              + length
              + " blockBytes="
              + blockBytes
              + ": the range must lie within one (page, layer) block");
    }
  }

  boolean isClosed() {
    return closed;
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      arena.close();
    }
  }

  @Override
  public String toString() {
    return "sim "
        + kind
        + " pool[pages="
        + spec.pages()
        + ", bytes="
        + spec.bytes()
        + ", "
        + spec.memoryLayout()
        + (closed ? ", closed" : "")
        + "]";
  }
}
