package io.kvtier.core.cache;

import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.Optional;

/**
 * A hand-written fake of the memory SPIs: heap-backed device and host pools and a transfer engine
 * whose copies happen only when the test completes them, in FIFO order per direction, each
 * either succeeding or failing as the test says. A failed device-to-host copy leaves the host
 * pages untouched; a failed host-to-device copy scribbles over the device pages, so that using
 * them shows up as wrong bytes.
 */
final class FakeKvMemory {
  final KvLayout layout;
  final Pool device;
  final Pool host;
  final Engine engine;

  FakeKvMemory(KvLayout layout, int devicePages, int hostPages) {
    this.layout = layout;
    this.device = new Pool(new PoolSpec(layout, devicePages, MemoryLayout.LAYER_FIRST));
    this.host =
        hostPages == 0 ? null : new Pool(new PoolSpec(layout, hostPages, MemoryLayout.PAGE_FIRST));
    this.engine = host == null ? null : new Engine(device, host);
  }

  /** A small layout: 2 layers, 4 bytes per K or V vector. */
  static KvLayout smallLayout(int pageSize) {
    return new KvLayout(2, 1, 2, 2, pageSize);
  }

  /** One heap-backed pool; serves as device and as host memory. */
  static final class Pool implements DeviceMemory, HostMemory {
    private final PoolSpec spec;
    private final byte[][] blocks;
    private boolean closed;

    Pool(PoolSpec spec) {
      this.spec = spec;
      this.blocks = new byte[spec.pages() * spec.layout().layers()][];
      for (int i = 0; i < blocks.length; i++) {
        blocks[i] = new byte[(int) spec.layout().pageBytesPerLayer()];
      }
    }

    byte[] blockBytes(int page, int layer) {
      if (closed) {
        throw new IllegalStateException("pool closed");
      }
      Objects.checkIndex(page, spec.pages());
      Objects.checkIndex(layer, spec.layout().layers());
      return blocks[page * spec.layout().layers() + layer];
    }

    @Override
    public PoolSpec spec() {
      return spec;
    }

    @Override
    public void write(int page, int layer, long offset, MemorySegment src) {
      MemorySegment.copy(
          src, 0, MemorySegment.ofArray(blockBytes(page, layer)), offset, src.byteSize());
    }

    @Override
    public void read(int page, int layer, long offset, MemorySegment dst) {
      MemorySegment.copy(
          MemorySegment.ofArray(blockBytes(page, layer)), offset, dst, 0, dst.byteSize());
    }

    @Override
    public MemorySegment block(int page, int layer) {
      return MemorySegment.ofArray(blockBytes(page, layer));
    }

    @Override
    public boolean pinned() {
      return false;
    }

    @Override
    public TransferEngine transferEngine(HostMemory hostMemory) {
      return new Engine(this, (Pool) hostMemory);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** A copy that happens when the test completes it. */
  static final class Handle implements TransferHandle {
    private final long sequence;
    private final TransferBatch batch;
    private volatile boolean done;
    private volatile Throwable failure;

    Handle(long sequence, TransferBatch batch) {
      this.sequence = sequence;
      this.batch = batch;
    }

    @Override
    public long sequence() {
      return sequence;
    }

    @Override
    public TransferBatch batch() {
      return batch;
    }

    @Override
    public boolean isDone() {
      return done;
    }

    @Override
    public Optional<Throwable> failure() {
      return Optional.ofNullable(failure);
    }

    @Override
    public void await() {
      if (!done) {
        throw new IllegalStateException(
            "fake copy " + batch + " awaited before the test" + " completed it: complete it first");
      }
      if (failure != null) {
        throw new TransferFailedException("fake copy failed: " + batch, failure);
      }
    }

    @Override
    public boolean await(Duration timeout) {
      await();
      return true;
    }
  }

  /** The transfer engine: FIFO queues per direction, completed by the test. */
  static final class Engine implements TransferEngine {
    private final Pool device;
    private final Pool host;
    private final ArrayDeque<Handle> writes = new ArrayDeque<>();
    private final ArrayDeque<Handle> loads = new ArrayDeque<>();
    private long writeSequence;
    private long loadSequence;
    long submittedWrites;
    long submittedLoads;

    Engine(Pool device, Pool host) {
      this.device = device;
      this.host = host;
    }

    @Override
    public TransferHandle submit(TransferBatch batch) {
      for (int i = 0; i < batch.size(); i++) {
        Objects.checkIndex(batch.devicePage(i), device.spec().pages());
        Objects.checkIndex(batch.hostPage(i), host.spec().pages());
      }
      if (batch.direction() == TransferDirection.DEVICE_TO_HOST) {
        Handle h = new Handle(writeSequence++, batch);
        writes.add(h);
        submittedWrites++;
        return h;
      }
      Handle h = new Handle(loadSequence++, batch);
      loads.add(h);
      submittedLoads++;
      return h;
    }

    int pendingWrites() {
      return writes.size();
    }

    int pendingLoads() {
      return loads.size();
    }

    /** Completes the next write copy (head of the FIFO). */
    void completeWrite(boolean fail) {
      complete(writes.poll(), fail);
    }

    /** Completes the next load copy (one layer of a load-back). */
    void completeLoad(boolean fail) {
      complete(loads.poll(), fail);
    }

    void completeAll() {
      while (!writes.isEmpty()) {
        completeWrite(false);
      }
      while (!loads.isEmpty()) {
        completeLoad(false);
      }
    }

    private void complete(Handle h, boolean fail) {
      TransferBatch b = h.batch();
      int layers = device.spec().layout().layers();
      for (int i = 0; i < b.size(); i++) {
        for (int layer = 0; layer < layers; layer++) {
          if (b.layer().isPresent() && b.layer().getAsInt() != layer) {
            continue;
          }
          byte[] d = device.blockBytes(b.devicePage(i), layer);
          byte[] hb = host.blockBytes(b.hostPage(i), layer);
          if (b.direction() == TransferDirection.DEVICE_TO_HOST) {
            if (!fail) {
              System.arraycopy(d, 0, hb, 0, d.length);
            }
          } else if (fail) {
            java.util.Arrays.fill(d, (byte) 0x5A);
          } else {
            System.arraycopy(hb, 0, d, 0, d.length);
          }
        }
      }
      if (fail) {
        h.failure = new IllegalStateException("injected copy failure");
      }
      h.done = true;
    }

    @Override
    public int inFlight() {
      return writes.size() + loads.size();
    }

    @Override
    public void close() {}
  }
}
