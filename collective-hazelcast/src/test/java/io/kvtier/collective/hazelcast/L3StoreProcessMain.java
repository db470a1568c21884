package io.kvtier.collective.hazelcast;

import io.kvtier.asserting.Providers;
import io.kvtier.core.cache.Admission;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.RequestOptions;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferEngine;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * One kvtier process of {@link HazelcastL3SharedStoreTest}: a single-rank cache on {@code sim}
 * pools whose L3 store is the {@code hazelcast} store, a client of the test's cluster.
 *
 * <p>{@code write}: computes the KV of a fixed prompt (a byte pattern of the tokens), finishes
 * it and waits until its host backup and its L3 write have committed; prints {@code WRITTEN n}
 * with the pages written. {@code read}: a fresh cache prefetches the same prompt from L3, admits
 * it, waits for the load-back and checks every page's bytes; prints {@code L3HIT tokens
 * MISMATCHES m}. A failure prints {@code FAILED ...} and exits with status 3.
 *
 * <p>Arguments: {@code write} or {@code read}, then {@code hazelcast.KEY=VALUE} settings.
 */
final class L3StoreProcessMain {
  static final int PAGE = 16;
  static final int PROMPT = 8 * PAGE;
  private static final KvLayout LAYOUT = new KvLayout(2, 1, 4, 2, PAGE);

  private L3StoreProcessMain() {}

  public static void main(String[] args) {
    boolean write = args[0].equals("write");
    Map<String, String> properties = new LinkedHashMap<>();
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      properties.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    HazelcastTestCluster.quietLogs();
    int status = 0;
    try {
      run(write, new BackendContext(0, properties, TimeSource.SYSTEM, BackendMetrics.NOOP));
    } catch (RuntimeException | InterruptedException e) {
      System.out.println(
          "FAILED "
              + e.getClass().getName()
              + ": "
              + String.valueOf(e.getMessage()).replace('\n', '|'));
      status = 3;
    }
    System.out.flush();
    // The client's threads would keep the JVM alive.
    Runtime.getRuntime().halt(status);
  }

  private static void run(boolean write, BackendContext storeContext) throws InterruptedException {
    BackendContext sim = BackendContext.defaults();
    int[] tokens = new int[PROMPT];
    for (int i = 0; i < PROMPT; i++) {
      tokens[i] = 100 + (i * 37) % 5000;
    }
    try (DeviceMemory device =
            Providers.named(DeviceMemoryProvider.class, "sim")
                .open(new PoolSpec(LAYOUT, 32, MemoryLayout.LAYER_FIRST), sim);
        HostMemory host =
            Providers.named(HostMemoryProvider.class, "sim")
                .open(new PoolSpec(LAYOUT, 64, MemoryLayout.PAGE_FIRST), sim);
        TransferEngine engine = device.transferEngine(host);
        KvStore store =
            new HazelcastKvStoreProvider()
                .open(new KvStoreSpec(LAYOUT, 16L << 20, "l3-two-process"), storeContext);
        L3Executor executor = L3Executor.background("l3-worker")) {
      L3Config l3 = L3Config.DEFAULTS.withPrefetchThreshold(PAGE).withModelId("two-process");
      RankCache cache =
          RankCache.withMemory(
              CacheConfig.of(PAGE, 32, 64),
              device,
              host,
              engine,
              new L3Setup(l3, store, executor, TimeSource.SYSTEM, 0, 1));
      if (write) {
        cache.admit(1, tokens, RequestOptions.DEFAULT);
        cache.allocateTokens(1, PROMPT);
        int[] table = cache.pageTable(1);
        for (int page = 0; page < table.length; page++) {
          for (int layer = 0; layer < LAYOUT.layers(); layer++) {
            device.write(table[page], layer, 0, MemorySegment.ofArray(pattern(page, layer)));
          }
        }
        cache.finish(1);
        syncUntil(cache, () -> cache.outstandingOperations() == 0);
        System.out.println("WRITTEN " + cache.l3Stats().pagesWritten());
      } else {
        if (!cache.startPrefetch(2, tokens, RequestOptions.DEFAULT)) {
          throw new IllegalStateException("no prefetch started");
        }
        syncUntil(cache, () -> cache.prefetchState(2) == RankCache.PrefetchState.DONE);
        Admission admission = cache.admit(2, tokens, RequestOptions.DEFAULT);
        int l3Tokens =
            cache.admittedPrefetch(2).orElseThrow().overlap(0, admission.devicePrefixLength());
        syncUntil(cache, () -> cache.outstandingOperations() == 0);
        int[] table = cache.pageTable(2);
        int mismatches = 0;
        byte[] actual = new byte[(int) LAYOUT.pageBytesPerLayer()];
        for (int page = 0; page < table.length; page++) {
          for (int layer = 0; layer < LAYOUT.layers(); layer++) {
            device.read(table[page], layer, 0, MemorySegment.ofArray(actual));
            if (!Arrays.equals(actual, pattern(page, layer))) {
              mismatches++;
            }
          }
        }
        cache.abort(2);
        System.out.println("L3HIT " + l3Tokens + " MISMATCHES " + mismatches);
      }
    }
  }

  /** What the first process computed for one page and layer: any fixed function will do. */
  static byte[] pattern(int page, int layer) {
    byte[] b = new byte[(int) LAYOUT.pageBytesPerLayer()];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (page * 31 + layer * 7 + i * 13 + 5);
    }
    return b;
  }

  private static void syncUntil(RankCache cache, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "not done within 60 s: outstanding="
                + cache.outstandingOperations()
                + " l3="
                + cache.l3Stats());
      }
      cache.sync();
      Thread.sleep(1);
    }
  }
}
