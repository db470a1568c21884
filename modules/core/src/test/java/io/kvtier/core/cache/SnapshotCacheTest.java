package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.WritePolicy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Recurrent-state snapshots in the device and host tiers (HYBRID.md §5): the replicated rule,
 * the slots a request holds with its pages, insert splits and adoption, the usable length of a
 * match, backups, demotion, load-back and the broken variants of classes 11 and 13.
 */
class SnapshotCacheTest {
  private static final int PAGE = 4;

  /** Interval of 2 pages: snapshots at 8, 16, 24, ... plus the tail. */
  private static final int INTERVAL = 2;

  private FakeKvMemory memory;

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private RankCache cache(int devicePages, int hostPages) {
    memory = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), devicePages, hostPages);
    CacheConfig config =
        CacheConfig.of(PAGE, devicePages, hostPages)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withSnapshots(1, INTERVAL);
    return hostPages == 0
        ? RankCache.withMemory(config, memory.device)
        : RankCache.withMemory(config, memory.device, memory.host, memory.engine);
  }

  private static int[] tokens(int n, int salt) {
    return IntStream.range(0, n).map(i -> i < 6 ? i + 1 : i * 7 + salt).toArray();
  }

  /** Admits, allocates, takes the step's snapshots (writing {@code mark} into each) and finishes. */
  private List<SnapshotTarget> serve(RankCache cache, long id, int[] tokens, int quota) {
    Admission a = cache.admit(id, tokens, RequestOptions.DEFAULT.withLoadBackQuota(quota));
    cache.allocateTokens(id, tokens.length);
    List<SnapshotTarget> taken = cache.stepSnapshots(id, a.devicePrefixLength(), tokens.length);
    for (SnapshotTarget t : taken) {
      writeState(t.slots()[0], t.position());
    }
    cache.finish(id);
    CacheInvariants.check(cache);
    return taken;
  }

  private void writeState(int slot, int value) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = arena.allocate(4);
      s.set(ValueLayout.JAVA_INT, 0, value);
      memory.device.write(slot, 0, 0, s);
    }
  }

  private int readState(int slot) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = arena.allocate(4);
      memory.device.read(slot, 0, 0, s);
      return s.get(ValueLayout.JAVA_INT, 0);
    }
  }

  private static void drain(RankCache cache) {
    cache.sync();
  }

  @Test
  void theRuleTakesIntervalsAndATailAndTheInsertEndsANodeAtEach() {
    RankCache cache = cache(32, 0);
    int[] t = tokens(22, 0);
    cache.admit(1, t);
    cache.allocateTokens(1, t.length);
    // 6 pages for 22 tokens, interval snapshots at 8, 16 and 24 (inside the pages), one tail.
    assertThat(cache.deviceUsage().free()).isEqualTo(32 - 6 - 4);
    List<SnapshotTarget> first = cache.stepSnapshots(1, 0, 10);
    assertThat(first).extracting(SnapshotTarget::position).containsExactly(8);
    List<SnapshotTarget> rest = cache.stepSnapshots(1, 10, 22);
    assertThat(rest).extracting(SnapshotTarget::position).containsExactly(16, 20);
    cache.finish(1);
    CacheInvariants.check(cache);
    // Nodes end at 8, 16 and 20, each with its snapshot; the set at 24 was freed.
    assertThat(cache.nodeCount()).isEqualTo(3);
    assertThat(cache.deviceUsage().free()).isEqualTo(32 - 5 - 3);
    MatchResult whole = cache.match(0, t);
    assertThat(whole.matchedLength()).isEqualTo(20);
    assertThat(whole.usableLength()).isEqualTo(20);
    assertThat(whole.lastDeviceNode().hasDeviceSnapshot()).isTrue();
    // A match that ends between snapshots is usable only up to the one before it.
    MatchResult part = cache.match(0, java.util.Arrays.copyOf(t, 14));
    assertThat(part.matchedLength()).isEqualTo(12);
    assertThat(part.usableLength()).isEqualTo(8);
    CacheInvariants.check(cache);
  }

  @Test
  void aRequestResumesAtTheDeepestSnapshotOfItsMatchWithItsSlots() {
    RankCache cache = cache(32, 0);
    serve(cache, 1, tokens(22, 0), 0);
    int[] next = tokens(14, 0);
    next = java.util.Arrays.copyOf(next, 26);
    for (int i = 14; i < 26; i++) {
      next[i] = 1000 + i;
    }
    Admission a = cache.admit(2, next);
    assertThat(a.matchedLength()).isEqualTo(12);
    assertThat(a.usableLength()).isEqualTo(8);
    assertThat(a.devicePrefixLength()).isEqualTo(8);
    assertThat(cache.resumeSlots(2)).isEqualTo(a.lastDeviceNode().stateSlots());
    cache.allocateTokens(2, next.length);
    CacheInvariants.check(cache);
    // Its steps go on from 8: the interval snapshots at 16 and 24 and the tail at 20 are its own.
    assertThat(cache.stepSnapshots(2, 8, 26))
        .extracting(SnapshotTarget::position)
        .containsExactly(16, 24);
    cache.abort(2);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void withoutATailANextTurnResumesOnlyAtAnIntervalInsideItsHistory() {
    RankCache cache = cache(32, 0);
    CacheTestHooks.takeIntervalSnapshotsOnly(cache);
    serve(cache, 1, tokens(22, 0), 0);
    int[] turn2 = java.util.Arrays.copyOf(tokens(22, 0), 30);
    Admission a = cache.admit(2, turn2);
    assertThat(a.matchedLength()).isEqualTo(20);
    assertThat(a.usableLength()).isEqualTo(16);
    cache.abort(2);
    CacheTestHooks.reset(cache);

    RankCache real = cache(32, 0);
    serve(real, 1, tokens(22, 0), 0);
    Admission b = real.admit(2, turn2);
    assertThat(b.usableLength()).isEqualTo(20);
    real.abort(2);
  }

  @Test
  void aBackupCopiesTheSnapshotAndDemotionKeepsTheHostOneWhichLoadsBackWithTheChain() {
    RankCache cache = cache(16, 32);
    int[] t = tokens(22, 0);
    serve(cache, 1, t, 0);
    memory.engine.completeAll();
    drain(cache);
    RadixNode end = cache.match(0, t).lastDeviceNode();
    assertThat(end.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(end.hasHostSnapshot()).isTrue();
    int written = readState(end.stateSlots()[0]);
    assertThat(written).isEqualTo(20);

    cache.evictDevice(16);
    CacheInvariants.check(cache);
    assertThat(end.onDevice()).isFalse();
    assertThat(end.hasDeviceSnapshot()).isFalse();
    assertThat(end.hasHostSnapshot()).isTrue();
    assertThat(cache.deviceUsage().free()).isEqualTo(16);
    MatchResult m = cache.match(0, t);
    assertThat(m.hostHitLength()).isEqualTo(20);
    assertThat(m.usableLength()).isEqualTo(20);

    int[] turn2 = java.util.Arrays.copyOf(t, 26);
    Admission a = cache.admit(2, turn2);
    assertThat(a.loadedLength()).isEqualTo(20);
    assertThat(a.usableLength()).isEqualTo(20);
    int[] resume = cache.resumeSlots(2);
    assertThat(resume).hasSize(1);
    memory.engine.completeAll();
    drain(cache);
    // The state the first request wrote came back with the chain's pages, into a new slot.
    assertThat(readState(resume[0])).isEqualTo(20);
    cache.abort(2);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void theStrandingVariantFreesTheHostSnapshotAtDemotionAndTheMatchIsNoLongerUsable() {
    RankCache cache = cache(16, 32);
    CacheTestHooks.demoteFreeingTheHostSnapshot(cache);
    int[] t = tokens(22, 0);
    serve(cache, 1, t, 0);
    memory.engine.completeAll();
    drain(cache);
    cache.evictDevice(16);
    MatchResult m = cache.match(0, t);
    assertThat(m.hostHitLength()).isEqualTo(20);
    // Caught: host KV matched, but no state to resume from (issue 22's stranded state).
    assertThat(m.usableLength()).isZero();
    assertThat(CacheTestHooks.firedVariants(cache)).isPositive();
  }

  @Test
  void aFailedBackupRollsTheHostSnapshotBackAndAnAbortFreesTheRequestsSlots() {
    RankCache cache = cache(16, 32);
    int[] t = tokens(22, 0);
    serve(cache, 1, t, 0);
    int writes = cache.pendingWrites();
    BitSet failed = new BitSet();
    failed.set(0, writes);
    memory.engine.completeAll();
    cache.commits().commitWrites(writes, failed);
    CacheInvariants.check(cache);
    RadixNode end = cache.match(0, t).lastDeviceNode();
    assertThat(end.backupState()).isEqualTo(BackupState.NONE);
    assertThat(end.hasHostSnapshot()).isFalse();
    assertThat(end.hasDeviceSnapshot()).isTrue();
    assertThat(cache.hostUsage().free()).isEqualTo(32);

    cache.admit(2, tokens(40, 5));
    cache.allocateTokens(2, 40);
    cache.abort(2);
    memory.engine.completeAll();
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  /**
   * Two ranks serve the same requests; rank 0's backup copy of the first one has finished, rank
   * 1's not yet. The next insert's snapshot decisions must not depend on that: the replicas stay
   * equal. With class 12's broken variant (a snapshot taken only when this rank's copies are
   * done) they diverge, which the replica digest shows.
   */
  private long[] digestsAfterSkewedCopies(boolean broken) {
    RankCache[] ranks = {cache(32, 64), null};
    FakeKvMemory first = memory;
    ranks[1] = cache(32, 64);
    FakeKvMemory second = memory;
    for (RankCache c : ranks) {
      if (broken) {
        CacheTestHooks.decideSnapshotsFromCopyProgress(c);
      }
    }
    for (int i = 0; i < 2; i++) {
      memory = i == 0 ? first : second;
      serve(ranks[i], 1, tokens(22, 0), 0);
    }
    first.engine.completeAll();
    for (int i = 0; i < 2; i++) {
      memory = i == 0 ? first : second;
      serve(ranks[i], 2, tokens(22, 9), 0);
    }
    long fired = CacheTestHooks.firedVariants(ranks[0]) + CacheTestHooks.firedVariants(ranks[1]);
    return new long[] {ranks[0].replicaDigest(), ranks[1].replicaDigest(), fired};
  }

  @Test
  void class12ASnapshotDecidedFromRankLocalCopyProgressIsCaughtByTheReplicaDigest() {
    long[] control = digestsAfterSkewedCopies(false);
    assertThat(control[0]).as("control: same decisions on both ranks").isEqualTo(control[1]);
    assertThat(control[2]).isZero();
    long[] broken = digestsAfterSkewedCopies(true);
    assertThat(broken[2]).as("the slow rank declined a snapshot").isPositive();
    assertThat(broken[0]).as("the replicas diverged").isNotEqualTo(broken[1]);
  }

  @Test
  void theInvariantsCatchAStrayHostSnapshotAndAResumeFromAnotherNode() {
    RankCache cache = cache(32, 0);
    serve(cache, 1, tokens(22, 0), 0);
    RadixNode end = cache.match(0, tokens(22, 0)).lastDeviceNode();
    // I7: a host snapshot on a node without a host copy.
    end.hostStateSlots = new int[] {0};
    cache.rooms().ledger().changed.mark(end);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> CacheInvariants.checkChanged(cache))
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("I7");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> CacheInvariants.check(cache))
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("I7");
    end.hostStateSlots = null;

    // I8: a request that resumes from slots that are not its locked node's snapshot.
    cache.admit(2, tokens(22, 0));
    RequestState r = cache.rooms().requests().get(2L);
    r.resumeSlots = new int[] {r.resumeSlots[0] + 1};
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> CacheInvariants.checkChanged(cache))
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("I8");
  }

  @Test
  void aUsableLengthBeyondTheMatchIsRefused() {
    RankCache cache = cache(32, 0);
    RadixNode root = cache.match(0, new int[0]).lastDeviceNode();
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> new MatchResult(new int[0], 4, 4, root, root, List.of(), 12))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("usableLength=12 must be within the matched length 8");
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> new Admission(1, 4, 0, 0, List.of(), root, root, 4, 8))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("usableLength=8 must be within matchedLength=4");
    assertThat(new MatchResult(new int[0], 4, 4, root, root, List.of()).usableLength())
        .isEqualTo(8);
  }
}
