package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvTierProvider;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One simulated rank for tests: a cache over {@code sim} device and host pools whose copies
 * complete by this rank's own virtual clock, so two ranks given the same operations can run
 * their copies at different speeds.
 */
final class SimRank implements AutoCloseable {
  final int rank;
  final AtomicLong now = new AtomicLong();
  final KvLayout layout;
  final DeviceMemory device;
  final HostMemory host;
  final TransferEngine engine;
  final RankCache cache;

  SimRank(int rank, CacheConfig config, KvLayout layout, long seed, double failureProbability) {
    this(rank, config, layout, seed, failureProbability, CacheEventListener.NONE);
  }

  /** A rank whose cache reports its KV events to {@code listener}. */
  SimRank(
      int rank,
      CacheConfig config,
      KvLayout layout,
      long seed,
      double failureProbability,
      CacheEventListener listener) {
    this.rank = rank;
    this.layout = layout;
    BackendContext context =
        new BackendContext(
            rank,
            Map.of(
                "sim.seed",
                Long.toString(seed),
                "sim.jitter",
                "0.5",
                "sim.failure-probability",
                Double.toString(failureProbability)),
            now::get,
            BackendMetrics.NOOP);
    this.device =
        sim(DeviceMemoryProvider.class)
            .open(new PoolSpec(layout, config.devicePages(), MemoryLayout.LAYER_FIRST), context);
    this.host =
        sim(HostMemoryProvider.class)
            .open(new PoolSpec(layout, config.hostPages(), MemoryLayout.PAGE_FIRST), context);
    this.engine = device.transferEngine(host);
    this.cache =
        RankCache.builder(config).device(device).host(host, engine).events(listener).build();
  }

  static <P> P sim(Class<P> type) {
    for (P p : ServiceLoader.load(type)) {
      if (p instanceof KvTierProvider k && k.name().equals("sim")) {
        return p;
      }
    }
    throw new AssertionError(
        "no provider named sim for "
            + type.getName()
            + ": is kvtier-backend-sim on the test module path?");
  }

  void advance(long nanos) {
    now.addAndGet(nanos);
  }

  @Override
  public void close() {
    // Far in the future: every copy still modelled completes instead of failing at close.
    now.addAndGet(1_000_000_000_000L);
    engine.close();
    host.close();
    device.close();
  }
}
