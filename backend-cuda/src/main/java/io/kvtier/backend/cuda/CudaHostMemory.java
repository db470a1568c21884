package io.kvtier.backend.cuda;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.driver.JCudaDriver;

/**
 * The {@code cuda} host (L2) pool: page-locked memory from {@code cuMemHostAlloc} (portable, so
 * that a context of any GPU may copy it asynchronously), seen as one {@link MemorySegment}.
 *
 * <p>The segment is bound to a shared {@link Arena} whose close frees the memory: every segment
 * handed out by {@link #block} becomes inaccessible (an {@link IllegalStateException}, not a
 * crash) the moment the pool closes. Closing the pool closes its transfer engines first.
 */
final class CudaHostMemory implements HostMemory {

  private final CudaContext context;
  private final CudaPoolAddressing addressing;
  private final Arena arena;
  private final MemorySegment memory;
  private final Set<CudaTransferEngine> engines = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  // reinterpret: the driver's allocation becomes a segment of its size, bound to the arena.
  @SuppressWarnings("restricted")
  private CudaHostMemory(PoolSpec spec, CudaContext context) {
    this.context = context;
    this.addressing = new CudaPoolAddressing("host", spec);
    long bytes = spec.bytes();
    CudaHostPointer pointer = new CudaHostPointer();
    int result =
        CudaDriver.result(
            () -> JCudaDriver.cuMemHostAlloc(pointer, bytes, JCudaDriver.CU_MEMHOSTALLOC_PORTABLE));
    if (result != CudaDriver.SUCCESS) {
      String what =
          "cannot allocate the pinned cuda host pool of bytes="
              + bytes
              + " (pages="
              + spec.pages()
              + " x pageBytes="
              + spec.layout().pageBytes()
              + "): cuMemHostAlloc"
              + " returned "
              + CudaDriver.name(result);
      if (result == CudaDriver.OUT_OF_MEMORY) {
        throw new IllegalArgumentException(
            what + "; use fewer pages, or raise the locked memory" + " limit (ulimit -l)");
      }
      throw new CudaDriverException(what, result);
    }
    this.arena = Arena.ofShared();
    // The arena's close runs the free, on the closing thread, where close() made the context
    // current.
    this.memory =
        MemorySegment.ofAddress(pointer.address())
            .reinterpret(bytes, arena, segment -> JCudaDriver.cuMemFreeHost(pointer));
    memory.fill((byte) 0);
  }

  /**
   * Opens a zero-filled pinned host pool with the context of {@code config.device()}.
   *
   * @param spec the pool's shape
   * @param config the parsed {@code cuda.*} keys
   * @return the pool
   * @throws IllegalArgumentException if the memory cannot be pinned
   * @throws IllegalStateException if JCuda or the driver cannot start
   */
  static HostMemory open(PoolSpec spec, CudaConfig config) {
    return new CudaHostMemory(spec, CudaContext.of(config.device()));
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
    MemorySegment.copy(src, 0, memory, at, src.byteSize());
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    Objects.requireNonNull(dst, "dst");
    checkOpen();
    long at = addressing.rangeOffset(page, layer, offset, dst.byteSize());
    MemorySegment.copy(memory, at, dst, 0, dst.byteSize());
  }

  @Override
  public MemorySegment block(int page, int layer) {
    checkOpen();
    return memory.asSlice(addressing.blockOffset(page, layer), addressing.blockBytes());
  }

  /**
   * Always true: the memory is page-locked by the driver.
   *
   * @return true
   */
  @Override
  public boolean pinned() {
    return true;
  }

  /** The address of the pool's first byte, for the transfer engine; valid while open. */
  long address() {
    return memory.address();
  }

  CudaPoolAddressing addressing() {
    return addressing;
  }

  void register(CudaTransferEngine engine) {
    engines.add(engine);
  }

  void unregister(CudaTransferEngine engine) {
    engines.remove(engine);
  }

  void checkOpen() {
    if (closed) {
      throw new IllegalStateException(
          "the cuda host pool is closed: open a new one instead of using it after close()");
    }
  }

  /**
   * Closes the pool's transfer engines (waiting for their copies), then unpins and frees the
   * memory. Idempotent.
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
    arena.close();
  }

  @Override
  public String toString() {
    return "cuda host pool[pages="
        + spec().pages()
        + ", bytes="
        + spec().bytes()
        + ", "
        + spec().memoryLayout()
        + ", pinned"
        + (closed ? ", closed" : "")
        + "]";
  }
}
