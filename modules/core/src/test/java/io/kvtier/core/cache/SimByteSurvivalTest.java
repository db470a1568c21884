package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.ServiceLoader;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every page's bytes survive device to host to device on the {@code sim} backend with real
 * copies: pages are written with a pattern of (prefix hash, layer, position) after allocation,
 * and every cached page (device and committed host copies) is verified after every step, in
 * particular after each load-back commit. Copies complete in virtual time that the test
 * advances, with jitter so that commits see partial ready prefixes; one variant injects copy
 * failures, which must never make wrong bytes visible. Half the requests stream a random subset
 * of their layers through a prepared backup, so attached backups (streamed layers plus the
 * catch-up batch) are loaded back and verified too.
 */
class SimByteSurvivalTest {

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private static <P> P sim(Class<P> type) {
    for (P p : ServiceLoader.load(type)) {
      if (p instanceof io.kvtier.spi.KvTierProvider k && k.name().equals("sim")) {
        return p;
      }
    }
    throw new AssertionError(
        "no provider named sim for "
            + type.getName()
            + ": is kvtier-backend-sim on the test module path?");
  }

  @ParameterizedTest(name = "pageSize={0} write={1} failures={2}")
  @CsvSource({
    "1, WRITE_THROUGH, 0",
    "16, WRITE_THROUGH, 0",
    "1, WRITE_BACK, 0",
    "16, WRITE_BACK, 0",
    "16, WRITE_THROUGH_SELECTIVE, 0",
    "1, WRITE_THROUGH, 0.1",
    "16, WRITE_BACK, 0.1"
  })
  void pagesSurviveDeviceToHostToDevice(int pageSize, WritePolicy writePolicy, double failures) {
    TestSeeds.run(
        seed -> run(seed ^ pageSize ^ writePolicy.ordinal(), pageSize, writePolicy, failures));
  }

  private void run(long seed, int pageSize, WritePolicy writePolicy, double failures) {
    Random rnd = new Random(seed);
    AtomicLong now = new AtomicLong();
    BackendContext context =
        new BackendContext(
            0,
            Map.of(
                "sim.jitter",
                "0.5",
                "sim.seed",
                Long.toString(seed),
                "sim.failure-probability",
                Double.toString(failures)),
            now::get,
            BackendMetrics.NOOP);
    KvLayout layout = new KvLayout(3, 2, 4, 2, pageSize);
    int devicePages = pageSize == 1 ? 48 : 10;
    int hostPages = devicePages * 4;
    DeviceMemory device =
        sim(DeviceMemoryProvider.class)
            .open(new PoolSpec(layout, devicePages, MemoryLayout.LAYER_FIRST), context);
    HostMemory host =
        sim(HostMemoryProvider.class)
            .open(new PoolSpec(layout, hostPages, MemoryLayout.PAGE_FIRST), context);
    TransferEngine engine = device.transferEngine(host);
    CacheConfig config =
        new CacheConfig(
            pageSize, devicePages, hostPages, writePolicy, 2, EvictionPolicy.LRU, 1, 1000);
    RankCache cache = RankCache.withMemory(config, device, host, engine);
    KvPattern pattern = new KvPattern(layout);
    List<int[]> corpus = new ArrayList<>();
    int loadsVerified = 0;
    int rounds = TestSeeds.scaled(400);
    try {
      for (int round = 0; round < rounds; round++) {
        int[] tokens = prompt(rnd, corpus, pageSize);
        long id = round;
        Admission a = cache.admit(id, tokens);
        try {
          cache.allocateTokens(id, tokens.length);
        } catch (PoolExhaustedException e) {
          cache.abort(id);
          advanceAndSync(cache, now, rnd);
          continue;
        }
        long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
        RequestState state = cache.rooms().requests().get(id);
        for (int i = 0; i < state.ownCount(); i++) {
          pattern.write(device, state.own.slot(i), hashes, state.prefixLength / pageSize + i);
        }
        if (rnd.nextBoolean() && cache.prepareBackup(id)) {
          for (int layer = 0; layer < layout.layers(); layer++) {
            if (rnd.nextBoolean()) {
              cache.streamLayer(id, layer);
            }
          }
          if (rnd.nextBoolean()) {
            now.addAndGet(rnd.nextInt(20_000));
          }
        }
        if (a.loadedLength() > 0) {
          // Wait in virtual time until every load the prefix depends on is committed, then
          // check every prefix page; a failed load means the request must be aborted.
          while (!a.pendingLoads().stream().allMatch(LoadBack::isCommitted)) {
            advanceAndSync(cache, now, rnd);
          }
          if (a.pendingLoads().stream().anyMatch(LoadBack::failed)) {
            cache.abort(id);
            continue;
          }
          int[] table = cache.pageTable(id);
          for (int p = 0; p < a.devicePrefixLength() / pageSize; p++) {
            assertThat(pattern.mismatchLayer(device, table[p], hashes, p))
                .as("round %d: loaded page %d in slot %d", round, p, table[p])
                .isNegative();
          }
          loadsVerified++;
        }
        cache.finish(id);
        if (rnd.nextInt(3) == 0) {
          advanceAndSync(cache, now, rnd);
        }
        CacheInvariants.check(cache);
        String bad = pattern.verifyTree(cache, device, host);
        assertThat(bad).as("round %d", round).isNull();
      }
      while (cache.outstandingOperations() > 0) {
        advanceAndSync(cache, now, rnd);
      }
      CacheInvariants.checkIdle(cache);
      assertThat(pattern.verifyTree(cache, device, host)).isNull();
      assertThat(loadsVerified).as("load-backs verified").isGreaterThan(rounds / 20);
      if (writePolicy != WritePolicy.WRITE_BACK) {
        assertThat(cache.stats().preparedAttached())
            .as("attached prepared backups")
            .isGreaterThan(rounds / 20);
      }
    } finally {
      now.addAndGet(1_000_000_000_000L);
      engine.close();
      host.close();
      device.close();
    }
  }

  private static void advanceAndSync(RankCache cache, AtomicLong now, Random rnd) {
    now.addAndGet(rnd.nextInt(20_000));
    cache.sync();
    CacheInvariants.check(cache);
  }

  private static int[] prompt(Random rnd, List<int[]> corpus, int pageSize) {
    int[] base = corpus.isEmpty() ? new int[0] : corpus.get(rnd.nextInt(corpus.size()));
    int cut = rnd.nextInt(base.length + 1);
    int[] tokens = Arrays.copyOf(base, cut + 1 + rnd.nextInt(6 * pageSize));
    for (int i = cut; i < tokens.length; i++) {
      tokens[i] = rnd.nextInt(5);
    }
    if (corpus.size() < 30) {
      corpus.add(tokens);
    } else {
      corpus.set(rnd.nextInt(30), tokens);
    }
    return tokens;
  }
}
