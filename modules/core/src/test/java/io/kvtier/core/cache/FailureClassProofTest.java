package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.WritePolicy;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Mutation proofs for failure classes 6 to 10 of CACHE.md §14: each test runs one scenario twice,
 * with the real rules (the control, which every check passes) and with the broken variant of its
 * class switched on through {@link CacheTestHooks} (which a check must catch), and requires that
 * the variant actually changed a decision ({@link CacheTestHooks#firedVariants}), so that a
 * caught run cannot be an accident and a passing one cannot mean the variant never ran.
 */
class FailureClassProofTest {
  @BeforeAll
  static void setUp() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
    // The asserting pools of class 6 live in a module core's descriptor does not read.
    FailureClassProofTest.class
        .getModule()
        .addReads(ModuleLayer.boot().findModule("io.kvtier.asserting").orElseThrow());
  }

  /** What a run left: the failure it raised (null if none) and how often the variant fired. */
  private record Outcome(Throwable failure, long fired) {}

  // ---------------------------------------------------------------- class 6

  /** Two ranks, the second slow: a request streams a layer and aborts; the next one writes. */
  private static Outcome sourcesFreedUnderACopy(boolean broken) {
    StreamedSourceTest.Rank[] ranks = StreamedSourceTest.ranks(2);
    if (broken) {
      for (StreamedSourceTest.Rank r : ranks) {
        CacheTestHooks.freeStreamedSourcesAtOnce(r.cache);
      }
    }
    int[] t = StreamedSourceTest.tokens(8, 1);
    int[] given = null;
    for (StreamedSourceTest.Rank r : ranks) {
      r.cache.admit(1, t);
      given = r.compute(1, t);
    }
    StreamedSourceTest.prepareAndStream(1, ranks);
    for (StreamedSourceTest.Rank r : ranks) {
      r.cache.abort(1);
    }
    int[] held = given;
    Throwable failure =
        catchThrowable(
            () -> {
              StreamedSourceTest.nextRequestWrites(2, held, ranks);
              StreamedSourceTest.drain(ranks);
            });
    return new Outcome(failure, CacheTestHooks.firedVariants(ranks[1].cache));
  }

  @Test
  void class6SourcePagesFreedUnderACopyAreCaughtByTheAssertingDevicePool() {
    Outcome control = sourcesFreedUnderACopy(false);
    assertThat(control.failure()).as("control").isNull();
    assertThat(control.fired()).isZero();
    Outcome broken = sourcesFreedUnderACopy(true);
    assertThat(broken.fired()).as("the variant skipped the hold").isPositive();
    assertThat(broken.failure())
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("that DEVICE_TO_HOST copy seq")
        .hasMessageContaining("still reads");
  }

  // ---------------------------------------------------------------- class 7

  private static L3Rank[] l3Ranks(Consumer<RankCache> breakIt) {
    L3Config l3 = L3Config.DEFAULTS.withPrefetchThreshold(L3Rank.PAGE);
    L3Rank[] ranks = {
      new L3Rank(0, 2, new FakeKvStore(), l3, 32, 64),
      new L3Rank(1, 2, new FakeKvStore(), l3, 32, 64)
    };
    for (L3Rank r : ranks) {
      breakIt.accept(r.cache);
    }
    return ranks;
  }

  private static void compute(L3Rank r, long id, int[] tokens) {
    r.cache.admit(id, tokens);
    r.cache.allocateTokens(id, tokens.length);
    RequestState s = r.cache.rooms().requests().get(id);
    long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
    for (int i = 0; i < s.ownCount(); i++) {
      r.pattern.write(r.memory.device, s.own.slot(i), hashes, s.prefixLength / L3Rank.PAGE + i);
    }
  }

  private static void drain(L3Rank... ranks) {
    for (int round = 0; ranks[0].cache.outstandingOperations() > 0; round++) {
      assertThat(round).as("sync rounds").isLessThan(10);
      for (L3Rank r : ranks) {
        r.memory.engine.completeAll();
        r.executor.runAll();
      }
      L3Rank.sync(ranks);
    }
    for (L3Rank r : ranks) {
      CacheInvariants.checkIdle(r.cache);
    }
  }

  /** Rank 0 finishes a backup copy, rank 1 not yet; the ranks sync (MIN) and go on. */
  private static Outcome visibleBeforeTheMinCommit(boolean broken) {
    L3Rank[] ranks =
        l3Ranks(
            c -> {
              if (broken) {
                CacheTestHooks.commitWritesWithTheLocalCount(c);
              }
            });
    int[] t = StreamedSourceTest.tokens(8, 7);
    for (L3Rank r : ranks) {
      compute(r, 1, t);
      r.cache.finish(1);
    }
    ranks[0].memory.engine.completeWrite(false);
    Throwable failure =
        catchThrowable(
            () -> {
              L3Rank.sync(ranks);
              drain(ranks);
            });
    return new Outcome(failure, CacheTestHooks.firedVariants(ranks[0].cache));
  }

  @Test
  void class7AWriteVisibleBeforeTheMinCommitIsCaughtByTheReplicaDigest() {
    Outcome control = visibleBeforeTheMinCommit(false);
    assertThat(control.failure()).as("control").isNull();
    assertThat(control.fired()).isZero();
    Outcome broken = visibleBeforeTheMinCommit(true);
    assertThat(broken.fired()).as("rank 0 committed its own count").isPositive();
    assertThat(broken.failure())
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("diverged after the sync");
  }

  // ---------------------------------------------------------------- class 8

  /** A request reserves a prepared backup and aborts before the forward pass streamed a layer. */
  private static Outcome leakOnRollback(boolean broken) {
    L3Rank[] ranks =
        l3Ranks(
            c -> {
              if (broken) {
                CacheTestHooks.leakRolledBackReservations(c);
              }
            });
    int[] t = StreamedSourceTest.tokens(8, 8);
    Throwable failure =
        catchThrowable(
            () -> {
              for (L3Rank r : ranks) {
                compute(r, 1, t);
                assertThat(r.cache.prepareBackup(1)).isTrue();
                r.cache.abort(1);
                CacheInvariants.check(r.cache);
              }
              drain(ranks);
            });
    return new Outcome(failure, CacheTestHooks.firedVariants(ranks[0].cache));
  }

  @Test
  void class8ALeakOnRollbackIsCaughtByThePoolInvariants() {
    Outcome control = leakOnRollback(false);
    assertThat(control.failure()).as("control").isNull();
    assertThat(control.fired()).isZero();
    Outcome broken = leakOnRollback(true);
    assertThat(broken.fired()).as("the rollback kept its slots").isPositive();
    assertThat(broken.failure())
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("reservedHostPages");
  }

  // ---------------------------------------------------------------- class 9

  /**
   * Write-back, a full device and a nearly full host: a request's host hit is loaded back, and
   * the device eviction this needs backs its victim up, which evicts host leaves; the chain being
   * loaded is such a leaf unless it is locked first.
   */
  private static Outcome reentrantEviction(boolean broken) {
    FakeKvMemory memory = new FakeKvMemory(FakeKvMemory.smallLayout(4), 4, 4);
    CacheConfig config =
        CacheConfig.of(4, 4, 4)
            .withWritePolicy(WritePolicy.WRITE_BACK)
            .withEvictionPolicy(EvictionPolicy.LRU);
    RankCache cache = RankCache.withMemory(config, memory.device, memory.host, memory.engine);
    if (broken) {
      CacheTestHooks.evictBeforeLockingTheLoadBack(cache);
    }
    int[] a = StreamedSourceTest.tokens(8, 9);
    int[] b = StreamedSourceTest.tokens(16, 10);
    Throwable failure =
        catchThrowable(
            () -> {
              cache.admit(1, a, RequestOptions.DEFAULT.withLoadBackQuota(0));
              cache.allocateTokens(1, a.length);
              cache.finish(1);
              cache.evictDevice(2);
              memory.engine.completeAll();
              cache.sync();
              assertThat(cache.match(0, a).hostHitLength())
                  .as("a is on the host only")
                  .isEqualTo(8);
              cache.admit(2, b, RequestOptions.DEFAULT.withLoadBackQuota(0));
              cache.allocateTokens(2, b.length);
              cache.finish(2);
              CacheInvariants.check(cache);
              Admission again = cache.admit(3, Arrays.copyOf(a, 8));
              CacheInvariants.check(cache);
              // The admission's host-hit anchor must still be a node of the tree: a server locks
              // it (RankCache.lock checks that the node is in the tree).
              cache.unlock(cache.lock(again.lastHostNode()));
              assertThat(again.loadedLength()).as("the host hit is loaded back").isEqualTo(8);
              memory.engine.completeAll();
              cache.sync();
              cache.finish(3);
              memory.engine.completeAll();
              cache.sync();
              CacheInvariants.checkIdle(cache);
            });
    return new Outcome(failure, CacheTestHooks.firedVariants(cache));
  }

  @Test
  void class9ReentrantEvictionOfTheChainBeingLoadedIsCaught() {
    Outcome control = reentrantEviction(false);
    assertThat(control.failure()).as("control").isNull();
    assertThat(control.fired()).isZero();
    Outcome broken = reentrantEviction(true);
    assertThat(broken.fired()).as("the eviction evicted host leaves").isPositive();
    assertThat(broken.failure())
        .as("the chain being loaded was evicted under the admission")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not in this cache's tree");
  }

  // ---------------------------------------------------------------- class 10

  /** A node is backed up (pending) and split by a match before its ack commits. */
  private static Outcome splitOfAPendingNode(boolean broken) {
    L3Rank[] ranks =
        l3Ranks(
            c -> {
              if (broken) {
                CacheTestHooks.splitPendingNodesOutsideTheirAck(c);
              }
            });
    int[] t = StreamedSourceTest.tokens(16, 11);
    int[] other = Arrays.copyOf(t, 12);
    other[8] = 999;
    Throwable failure =
        catchThrowable(
            () -> {
              for (L3Rank r : ranks) {
                compute(r, 1, t);
                r.cache.finish(1);
                assertThat(r.cache.pendingWrites()).isEqualTo(1);
                r.cache.match(0, other);
                CacheInvariants.check(r.cache);
              }
              drain(ranks);
            });
    return new Outcome(failure, CacheTestHooks.firedVariants(ranks[0].cache));
  }

  @Test
  void class10ASplitOfAPendingNodeOutsideItsAckIsCaughtByTheInvariants() {
    Outcome control = splitOfAPendingNode(false);
    assertThat(control.failure()).as("control").isNull();
    assertThat(control.fired()).isZero();
    Outcome broken = splitOfAPendingNode(true);
    assertThat(broken.fired()).as("the split left the upper half out").isPositive();
    assertThat(broken.failure())
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("PENDING without host slots or outside its write ack");
  }
}
