package io.kvtier.backend.cpu;

import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The off-heap memory behind a {@code cpu} device or host pool: one shared {@link Arena}, so that
 * the model and the copier threads may touch blocks from any thread, freed on {@link #close()}.
 * Blocks are addressed with {@link io.kvtier.spi.MemoryLayout#blockOffset}.
 *
 * <p>The pool knows the transfer engines that copy to or from it and closes them (which waits for
 * their copies) before it frees its memory: a copier thread must never touch freed memory, even
 * when a caller closes the pools first against the SPI's advice.
 */
final class CpuPool implements AutoCloseable {

  /** Page alignment: blocks of the common KV shapes then start on page and cache-line borders. */
  private static final long ALIGNMENT = 4096;

  private final String kind;
  private final PoolSpec spec;
  private final long blockBytes;
  private final Arena arena;
  private final MemorySegment memory;
  private final Set<CpuTransferEngine> engines = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** Guarded by this: set when close() starts, before the engines are closed. */
  private boolean closing;

  /**
   * Allocates a zero-filled pool.
   *
   * @param kind "device" or "host", for messages
   * @param spec the shape
   * @throws IllegalArgumentException if the machine or the JVM cannot hold the pool's bytes
   */
  CpuPool(String kind, PoolSpec spec) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.spec = Objects.requireNonNull(spec, "spec");
    this.blockBytes = spec.layout().pageBytesPerLayer();
    CpuMemoryLimit.check(kind, spec);
    Arena shared = Arena.ofShared();
    try {
      this.memory = shared.allocate(spec.bytes(), ALIGNMENT);
    } catch (OutOfMemoryError | IllegalArgumentException e) {
      shared.close();
      throw new IllegalArgumentException(
          "cannot allocate the cpu "
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

  String kind() {
    return kind;
  }

  /** The whole pool, for copies that address blocks with {@link #blockOffset}. */
  MemorySegment memory() {
    checkOpen();
    return memory;
  }

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
   * Checks a (page, layer) address and returns the offset of its block.
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
          "the cpu " + kind + " pool is closed: open a new one instead of using it after close()");
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

  /**
   * Remembers an engine to close before the memory is freed.
   *
   * @throws IllegalStateException if the pool is closing or closed
   */
  synchronized void register(CpuTransferEngine engine) {
    if (closing) {
      checkOpen();
      throw new IllegalStateException(
          "the cpu " + kind + " pool is closing: open a new one for a new transfer engine");
    }
    engines.add(engine);
  }

  void unregister(CpuTransferEngine engine) {
    engines.remove(engine);
  }

  /** Closes the engines that copy to or from this pool (waiting for their copies), then frees. */
  @Override
  public void close() {
    List<CpuTransferEngine> open;
    synchronized (this) {
      if (closing) {
        return;
      }
      // From here on no engine registers, so the snapshot is every engine there will be.
      closing = true;
      open = List.copyOf(engines);
    }
    // Outside the lock: an engine's close unregisters itself from both of its pools.
    for (CpuTransferEngine engine : open) {
      engine.close();
    }
    synchronized (this) {
      closed = true;
      arena.close();
    }
  }

  @Override
  public String toString() {
    return "cpu "
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
