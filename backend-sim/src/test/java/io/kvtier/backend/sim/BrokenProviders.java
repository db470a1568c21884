package io.kvtier.backend.sim;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.ReduceOp;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Optional;

/** Hand-written providers with one deliberate defect each, to show the suites catch it. */
final class BrokenProviders {

  private BrokenProviders() {}

  /** The defects of {@link BrokenDevice}. */
  enum DeviceDefect {
    /** Every layer of a page is stored in layer 0's block. */
    LAYERS_COLLIDE,
    /** Handles of odd sequence numbers say done at once. */
    ODD_HANDLES_LIE
  }

  /** A sim device with one defect. */
  @ProviderName("broken")
  static final class BrokenDevice implements DeviceMemoryProvider {
    private final DeviceDefect defect;

    BrokenDevice(DeviceDefect defect) {
      this.defect = defect;
    }

    @Override
    public String name() {
      return "broken";
    }

    @Override
    public Availability availability() {
      return Availability.available("broken on purpose");
    }

    @Override
    public String configNamespace() {
      return "sim";
    }

    @Override
    public DeviceMemory open(PoolSpec spec, BackendContext context) {
      DeviceMemory sim = new SimDeviceMemoryProvider().open(spec, context);
      return new DeviceMemory() {
        private int layer(int layer) {
          return defect == DeviceDefect.LAYERS_COLLIDE ? 0 : layer;
        }

        @Override
        public PoolSpec spec() {
          return sim.spec();
        }

        @Override
        public void write(int page, int layer, long offset, MemorySegment src) {
          sim.write(page, layer(layer), offset, src);
        }

        @Override
        public void read(int page, int layer, long offset, MemorySegment dst) {
          sim.read(page, layer(layer), offset, dst);
        }

        @Override
        public TransferEngine transferEngine(HostMemory host) {
          TransferEngine engine = sim.transferEngine(host);
          return defect == DeviceDefect.ODD_HANDLES_LIE ? new LyingEngine(engine) : engine;
        }

        @Override
        public void close() {
          sim.close();
        }
      };
    }
  }

  /** Passes everything through, except that odd handles claim to be done from the start. */
  private record LyingEngine(TransferEngine delegate) implements TransferEngine {
    @Override
    public TransferHandle submit(TransferBatch batch) {
      TransferHandle h = delegate.submit(batch);
      return new TransferHandle() {
        @Override
        public long sequence() {
          return h.sequence();
        }

        @Override
        public TransferBatch batch() {
          return h.batch();
        }

        @Override
        public boolean isDone() {
          return h.sequence() % 2 == 1 || h.isDone();
        }

        @Override
        public Optional<Throwable> failure() {
          return h.failure();
        }

        @Override
        public void await() throws InterruptedException {
          h.await();
        }

        @Override
        public boolean await(Duration timeout) throws InterruptedException {
          return h.await(timeout);
        }
      };
    }

    @Override
    public int inFlight() {
      return delegate.inFlight();
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  /** A collective that ignores tags (so cannot see a tag desync) or does not reduce. */
  record BrokenCollective(Collective delegate, boolean ignoreTags, boolean skipReduce)
      implements Collective {
    private String tag(String tag) {
      return ignoreTags ? "same" : tag;
    }

    @Override
    public int rank() {
      return delegate.rank();
    }

    @Override
    public int size() {
      return delegate.size();
    }

    @Override
    public long[] allReduce(ReduceOp op, long[] values, String tag) {
      long[] reduced = delegate.allReduce(op, values, tag(tag));
      return skipReduce ? values.clone() : reduced;
    }

    @Override
    public byte[] broadcast(int root, byte[] payload, String tag) {
      return delegate.broadcast(root, payload, tag(tag));
    }

    @Override
    public void barrier(String tag) {
      delegate.barrier(tag(tag));
    }

    @Override
    public void close() {
      delegate.close();
    }
  }
}
