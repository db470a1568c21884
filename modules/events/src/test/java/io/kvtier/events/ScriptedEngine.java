package io.kvtier.events;

import io.kvtier.backend.sim.SimDeviceMemoryProvider;
import io.kvtier.backend.sim.SimHostMemoryProvider;
import io.kvtier.core.cache.CacheEventListener;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One rank's cache over the sim backend, driven by a scripted multi-turn workload with a shared
 * system prompt: small pools, so that the run evicts from the device (demoting backed-up pages to
 * the host), loads host hits back and evicts host-only pages.
 */
final class ScriptedEngine implements AutoCloseable {
  static final int PAGE_SIZE = 4;

  final AtomicLong now = new AtomicLong();
  final DeviceMemory device;
  final HostMemory host;
  final TransferEngine engine;
  final RankCache cache;
  private final Random rnd = new Random(42);
  private final int[] system = tokens(3 * PAGE_SIZE, 1);
  private final List<int[]> histories = new ArrayList<>();
  private long nextId = 1;

  ScriptedEngine(CacheEventListener listener) {
    CacheConfig config =
        CacheConfig.of(PAGE_SIZE, 24, 40)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withEvictionPolicy(EvictionPolicy.LRU);
    KvLayout layout = new KvLayout(2, 1, 2, 2, PAGE_SIZE);
    BackendContext context =
        new BackendContext(0, Map.of("sim.seed", "5"), now::get, BackendMetrics.NOOP);
    this.device =
        new SimDeviceMemoryProvider()
            .open(new PoolSpec(layout, config.devicePages(), MemoryLayout.LAYER_FIRST), context);
    this.host =
        new SimHostMemoryProvider()
            .open(new PoolSpec(layout, config.hostPages(), MemoryLayout.PAGE_FIRST), context);
    this.engine = device.transferEngine(host);
    this.cache =
        RankCache.builder(config).device(device).host(host, engine).events(listener).build();
    for (int c = 0; c < 6; c++) {
      histories.add(system);
    }
  }

  private int[] tokens(int n, int base) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = base + rnd.nextInt(500);
    }
    return t;
  }

  /** One turn of a random conversation: its history and a question in, an answer out. */
  void turn() {
    int c = rnd.nextInt(histories.size());
    int[] history = histories.get(c);
    if (history.length > 10 * PAGE_SIZE) {
      history = system;
    }
    int[] prompt = concat(history, tokens(PAGE_SIZE + rnd.nextInt(2 * PAGE_SIZE), 1000));
    long id = nextId++;
    cache.admit(id, prompt);
    commit();
    int[] all = concat(prompt, tokens(PAGE_SIZE + rnd.nextInt(PAGE_SIZE), 2000));
    cache.allocateTokens(id, all.length);
    cache.finish(id, all);
    commit();
    histories.set(c, all);
  }

  /** Time passes and what has finished copying commits (one rank: its own progress). */
  void commit() {
    now.addAndGet(1_000_000_000L);
    cache.commits().commitWrites(cache.commits().readyWritePrefix());
    cache.commits().commitLoads(cache.commits().readyLoadPrefix());
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  @Override
  public void close() {
    now.addAndGet(1_000_000_000_000L);
    engine.close();
    host.close();
    device.close();
  }
}
