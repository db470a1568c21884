package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.AssertingDeviceMemory;
import io.kvtier.asserting.AssertingHostMemory;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferEngine;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * CACHE.md §11 and TransferHandle's contract: a device page that a streamed prepared-backup copy
 * reads is not freed, nor handed to a new owner, before that copy is done on every rank; the
 * asserting device pool ({@code io.kvtier.asserting}) fails a write into a page that a copy in
 * flight still reads. The streamed copy's sources are given up three ways: the request aborts,
 * its pages duplicate what the tree got meanwhile, or the node that adopted them after a rollback
 * is evicted. On 2 and 4 ranks, the last of which has not finished its copies yet; the next
 * request's pages are then written as the model would.
 */
class StreamedSourceTest {
  private static final int PAGE = 4;

  @BeforeAll
  static void readTheAssertingWrappers() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
    // Core's descriptor does not read the test-only wrappers; its tests do.
    StreamedSourceTest.class
        .getModule()
        .addReads(ModuleLayer.boot().findModule("io.kvtier.asserting").orElseThrow());
  }

  /** One rank: sim pools in the asserting wrappers, copies timed by this rank's own clock. */
  static final class Rank implements AutoCloseable {
    final AtomicLong now = new AtomicLong();
    final AssertingDeviceMemory device;
    final AssertingHostMemory host;
    final TransferEngine engine;
    final RankCache cache;
    final KvPattern pattern;

    Rank(int rank, CacheConfig config, KvLayout layout) {
      BackendContext context =
          new BackendContext(
              rank,
              Map.of("sim.seed", "7", "sim.d2h-latency", "100us", "sim.h2d-latency", "100us"),
              now::get,
              BackendMetrics.NOOP);
      this.device =
          new AssertingDeviceMemory(
              SimRank.sim(DeviceMemoryProvider.class)
                  .open(
                      new PoolSpec(layout, config.devicePages(), MemoryLayout.LAYER_FIRST),
                      context));
      this.host =
          new AssertingHostMemory(
              SimRank.sim(HostMemoryProvider.class)
                  .open(
                      new PoolSpec(layout, config.hostPages(), MemoryLayout.PAGE_FIRST), context));
      this.engine = device.transferEngine(host);
      this.cache = RankCache.withMemory(config, device, host, engine);
      this.pattern = new KvPattern(layout);
    }

    /** Allocates the request's pages and writes its KV into them, as the model does. */
    int[] compute(long id, int[] tokens) {
      cache.allocateTokens(id, tokens.length);
      RequestState r = cache.rooms().requests().get(id);
      long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
      for (int i = 0; i < r.ownCount(); i++) {
        pattern.write(device, r.own.slot(i), hashes, r.prefixLength / PAGE + i);
      }
      return r.own.toArray(0, r.ownCount(), cache.rooms().ledger().devicePool);
    }

    @Override
    public void close() {
      now.addAndGet(1_000_000_000_000L);
      engine.close();
      host.close();
      device.close();
    }
  }

  static Rank[] ranks(int n) {
    CacheConfig config =
        CacheConfig.of(PAGE, 16, 32)
            .withWritePolicy(WritePolicy.WRITE_THROUGH_SELECTIVE)
            .withEvictionPolicy(EvictionPolicy.LRU);
    KvLayout layout = new KvLayout(2, 1, 2, 2, PAGE);
    Rank[] ranks = new Rank[n];
    for (int r = 0; r < n; r++) {
      ranks[r] = new Rank(r, config, layout);
    }
    return ranks;
  }

  static int[] tokens(int length, int salt) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = 1 + (i * 7 + salt * 131) % 1000;
    }
    return t;
  }

  /** Streams layer 0 of request {@code id}'s prepared backup; only the last rank is slow. */
  static void prepareAndStream(long id, Rank... ranks) {
    for (Rank r : ranks) {
      assertThat(r.cache.prepareBackup(id)).isTrue();
      r.cache.streamLayer(id, 0);
    }
    for (int i = 0; i < ranks.length - 1; i++) {
      ranks[i].now.addAndGet(1_000_000_000L);
    }
    assertThat(ranks[ranks.length - 1].engine.inFlight()).as("the slow rank's copy").isPositive();
  }

  /** The next request: its pages are written, which the asserting pool checks on every rank. */
  static void nextRequestWrites(long id, int[] given, Rank... ranks) {
    int[] tokens = tokens(8, 99);
    int[][] slots = new int[ranks.length][];
    for (int i = 0; i < ranks.length; i++) {
      ranks[i].cache.admit(id, tokens);
      slots[i] = ranks[i].compute(id, tokens);
    }
    for (int i = 0; i < ranks.length; i++) {
      assertThat(slots[i])
          .as("rank %d: new pages while a copy reads %s", i, Arrays.toString(given))
          .doesNotContain(given);
      ranks[i].cache.finish(id);
      CacheInvariants.check(ranks[i].cache);
    }
  }

  /** The per-tick sync across the ranks (MIN of the ready prefixes, OR of the failures). */
  private static void sync(Rank... ranks) {
    if (ranks[0].cache.outstandingOperations() == 0) {
      return;
    }
    int writes = Integer.MAX_VALUE;
    int loads = Integer.MAX_VALUE;
    for (Rank r : ranks) {
      writes = Math.min(writes, r.cache.commits().readyWritePrefix());
      loads = Math.min(loads, r.cache.commits().readyLoadPrefix());
    }
    BitSet writeFailures = new BitSet();
    BitSet loadFailures = new BitSet();
    for (Rank r : ranks) {
      writeFailures.or(r.cache.commits().localWriteFailures(writes));
      loadFailures.or(r.cache.commits().localLoadFailures(loads));
    }
    long digest = 0;
    for (Rank r : ranks) {
      r.cache.commits().commitLoads(loads, loadFailures);
      r.cache.commits().commitWrites(writes, writeFailures);
      CacheInvariants.check(r.cache);
      digest = r == ranks[0] ? r.cache.replicaDigest() : digest;
      assertThat(r.cache.replicaDigest()).isEqualTo(digest);
    }
  }

  /** Every copy completes and commits; the caches are idle and their pages hold what they should. */
  static void drain(Rank... ranks) {
    for (int round = 0; ranks[0].cache.outstandingOperations() > 0; round++) {
      assertThat(round).as("sync rounds").isLessThan(10);
      for (Rank r : ranks) {
        r.now.addAndGet(1_000_000_000L);
      }
      sync(ranks);
    }
    for (Rank r : ranks) {
      CacheInvariants.checkIdle(r.cache);
      assertThat(r.pattern.verifyTree(r.cache, r.device, r.host)).isNull();
      assertThat(r.cache.deviceUsage().free() + r.cache.deviceUsage().evictable())
          .as("every page is free or in the tree again")
          .isEqualTo(16);
      r.close();
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void anAbortDoesNotFreeThePagesItsStreamedCopyReads(int n) {
    Rank[] ranks = ranks(n);
    int[] t = tokens(8, 1);
    int[] given = null;
    for (Rank r : ranks) {
      r.cache.admit(1, t);
      given = r.compute(1, t);
    }
    prepareAndStream(1, ranks);
    for (Rank r : ranks) {
      r.cache.abort(1);
    }
    nextRequestWrites(2, given, ranks);
    drain(ranks);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void duplicatesFreedAtTheInsertWaitForTheirStreamedCopy(int n) {
    Rank[] ranks = ranks(n);
    int[] t = tokens(8, 2);
    int[] given = null;
    for (Rank r : ranks) {
      r.cache.admit(1, t);
      r.compute(1, t);
      r.cache.admit(2, t);
      given = r.compute(2, t);
    }
    prepareAndStream(2, ranks);
    for (Rank r : ranks) {
      r.cache.finish(1);
      r.cache.finish(2);
      assertThat(r.cache.stats().preparedRolledBack())
          .as("request 2's pages are duplicates")
          .isEqualTo(1);
    }
    nextRequestWrites(3, given, ranks);
    drain(ranks);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void evictingTheNodeThatAdoptedStreamedPagesWaitsForTheCopy(int n) {
    Rank[] ranks = ranks(n);
    int[] t = tokens(8, 3);
    int[] given = null;
    for (Rank r : ranks) {
      r.cache.admit(1, t);
      given = r.compute(1, t);
    }
    prepareAndStream(1, ranks);
    for (Rank r : ranks) {
      // Only the first page is inserted: the backup cannot attach, its node adopts page 0.
      r.cache.finish(1, Arrays.copyOf(t, PAGE));
      assertThat(r.cache.stats().preparedRolledBack()).isEqualTo(1);
      assertThat(r.cache.evictDevice(1))
          .as("the adopting node is evicted, but its page is free only once the copy is done")
          .isZero();
      assertThat(r.cache.nodeCount()).isZero();
    }
    nextRequestWrites(2, given, ranks);
    drain(ranks);
  }
}
