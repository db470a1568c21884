package io.kvtier.simulator.replay;

import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A device or host pool with slots and no bytes: the replay needs the engine's decisions (which
 * pages are where), never the KV itself. A cache built over two of these and their {@link
 * InstantTransfers} runs the same code as one over real memory, with every copy finished the moment
 * it is submitted. Reading or writing a block is a bug of the caller and says so.
 *
 * <p>The layout has one layer, so that a load-back is one batch rather than one per layer: the
 * number of layers changes no decision of the cache.
 */
final class NoBytesPool implements DeviceMemory, HostMemory {
  private final PoolSpec spec;

  /**
   * A pool of {@code pages} pages of {@code pageSize} tokens.
   *
   * @param pageSize tokens per page
   * @param pages slots
   */
  NoBytesPool(int pageSize, int pages) {
    this.spec = new PoolSpec(new KvLayout(1, 1, 1, 1, pageSize), pages, MemoryLayout.PAGE_FIRST);
  }

  @Override
  public PoolSpec spec() {
    return spec;
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    throw noBytes();
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    throw noBytes();
  }

  @Override
  public MemorySegment block(int page, int layer) {
    throw noBytes();
  }

  @Override
  public boolean pinned() {
    return false;
  }

  @Override
  public boolean holdsBytes() {
    return false;
  }

  @Override
  public TransferEngine transferEngine(HostMemory host) {
    return new InstantTransfers();
  }

  @Override
  public void close() {}

  private static UnsupportedOperationException noBytes() {
    return new UnsupportedOperationException(
        "a replay pool holds no KV bytes: only the cache's slot accounting runs on it");
  }

  /**
   * Copies that are done when submitted, in order and without failure: what a replay assumes of
   * the copy engine (it measures hits, not copy time).
   */
  static final class InstantTransfers implements TransferEngine {
    private long sequence;

    @Override
    public TransferHandle submit(TransferBatch batch) {
      return new Done(sequence++, Objects.requireNonNull(batch, "batch"));
    }

    @Override
    public int inFlight() {
      return 0;
    }

    @Override
    public void close() {}
  }

  /** A finished copy. */
  private record Done(long sequence, TransferBatch batch) implements TransferHandle {
    @Override
    public boolean isDone() {
      return true;
    }

    @Override
    public Optional<Throwable> failure() {
      return Optional.empty();
    }

    @Override
    public void await() {}

    @Override
    public boolean await(Duration timeout) {
      return true;
    }
  }
}
