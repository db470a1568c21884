package io.kvtier.core;

import io.kvtier.core.discovery.ProviderCandidate;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.core.discovery.ProviderRegistry;
import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Hand-written providers that record what the engine does with them: which contexts they were
 * opened with and in which order things were closed. Nothing is allocated; reads and copies are
 * not supported.
 */
final class RecordingBackends {
  /** What happened, in order: "open device", "close host", ... */
  final List<String> events = Collections.synchronizedList(new ArrayList<>());

  /** The contexts the pools were opened with, device first. */
  final List<BackendContext> contexts = Collections.synchronizedList(new ArrayList<>());

  /** When true, opening the host pool fails. */
  volatile boolean failHostOpen;

  ProviderRegistries registries() {
    return new ProviderRegistries(
        ProviderRegistry.of(
            DeviceMemoryProvider.class,
            List.of(ProviderCandidate.of(RecordingDevice.class, () -> new RecordingDevice(this)))),
        ProviderRegistry.of(
            HostMemoryProvider.class,
            List.of(ProviderCandidate.of(RecordingHost.class, () -> new RecordingHost(this)))),
        ProviderRegistry.of(
            CollectiveProvider.class,
            List.of(ProviderCandidate.of(RecordingCollective.class, RecordingCollective::new))),
        ProviderRegistry.of(
            KvStoreProvider.class,
            List.of(ProviderCandidate.of(RecordingStore.class, () -> new RecordingStore(this)))));
  }

  /** The spec the store was opened with, or null. */
  volatile io.kvtier.spi.KvStoreSpec storeSpec;

  @ProviderName("rec")
  static final class RecordingStore implements KvStoreProvider {
    private final RecordingBackends log;

    RecordingStore(RecordingBackends log) {
      this.log = log;
    }

    @Override
    public String name() {
      return "rec";
    }

    @Override
    public Availability availability() {
      return Availability.available("records");
    }

    @Override
    public io.kvtier.spi.KvStore open(io.kvtier.spi.KvStoreSpec spec, BackendContext context) {
      log.events.add("open store");
      log.storeSpec = spec;
      return new io.kvtier.spi.KvStore() {
        @Override
        public int existsPrefix(List<io.kvtier.spi.PageKey> keys) {
          return 0;
        }

        @Override
        public int get(List<io.kvtier.spi.PageKey> keys, HostMemory host, int[] hostPages) {
          return 0;
        }

        @Override
        public int put(List<io.kvtier.spi.PageKey> keys, HostMemory host, int[] hostPages) {
          return 0;
        }

        @Override
        public io.kvtier.spi.KvStoreStats stats() {
          return new io.kvtier.spi.KvStoreStats(0, 0, 0, 0, 0, 0);
        }

        @Override
        public void close() {
          log.events.add("close store");
        }
      };
    }
  }

  @ProviderName("rec")
  static final class RecordingDevice implements DeviceMemoryProvider {
    private final RecordingBackends log;

    RecordingDevice(RecordingBackends log) {
      this.log = log;
    }

    @Override
    public String name() {
      return "rec";
    }

    @Override
    public Availability availability() {
      return Availability.available("records");
    }

    @Override
    public DeviceMemory open(PoolSpec spec, BackendContext context) {
      log.events.add("open device");
      log.contexts.add(context);
      return new Pool(log, "device", spec);
    }
  }

  @ProviderName("rec")
  static final class RecordingHost implements HostMemoryProvider {
    private final RecordingBackends log;

    RecordingHost(RecordingBackends log) {
      this.log = log;
    }

    @Override
    public String name() {
      return "rec";
    }

    @Override
    public Availability availability() {
      return Availability.available("records");
    }

    @Override
    public String configNamespace() {
      return "recfamily";
    }

    @Override
    public HostMemory open(PoolSpec spec, BackendContext context) {
      if (log.failHostOpen) {
        throw new IllegalStateException("host open failed (fake)");
      }
      log.events.add("open host");
      log.contexts.add(context);
      return new Pool(log, "host", spec);
    }
  }

  @ProviderName("rec")
  static final class RecordingCollective implements CollectiveProvider {
    @Override
    public String name() {
      return "rec";
    }

    @Override
    public Availability availability() {
      return Availability.available("records");
    }

    @Override
    public Collective join(CollectiveSpec spec, BackendContext context) {
      throw new UnsupportedOperationException("the backends holder does not join");
    }
  }

  /** A pool that is both device and host memory and records closing. */
  static final class Pool implements DeviceMemory, HostMemory {
    private final RecordingBackends log;
    private final String name;
    private final PoolSpec spec;

    Pool(RecordingBackends log, String name, PoolSpec spec) {
      this.log = log;
      this.name = name;
      this.spec = spec;
    }

    @Override
    public PoolSpec spec() {
      return spec;
    }

    @Override
    public void write(int page, int layer, long offset, MemorySegment src) {
      throw new UnsupportedOperationException("recording fake");
    }

    @Override
    public void read(int page, int layer, long offset, MemorySegment dst) {
      throw new UnsupportedOperationException("recording fake");
    }

    @Override
    public MemorySegment block(int page, int layer) {
      throw new UnsupportedOperationException("recording fake");
    }

    @Override
    public boolean pinned() {
      return false;
    }

    @Override
    public TransferEngine transferEngine(HostMemory host) {
      log.events.add("open transfers");
      return new TransferEngine() {
        @Override
        public TransferHandle submit(TransferBatch batch) {
          throw new UnsupportedOperationException("recording fake");
        }

        @Override
        public int inFlight() {
          return 0;
        }

        @Override
        public void close() {
          log.events.add("close transfers");
        }
      };
    }

    @Override
    public void close() {
      log.events.add("close " + name);
    }
  }
}
