package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Prepared backups with recurrent-state snapshots (HYBRID.md §5, CACHE.md §11): the backup
 * reserves host slots for the request's snapshots in its pages, streams the interval ones layer
 * by layer with the pages, copies the tail at the attach, and the chain of segment nodes the
 * insert makes takes it whole as one {@code PENDING} ack, or it is rolled back whole.
 */
class PreparedSnapshotBackupTest {
  private static final int PAGE = 4;

  /** Interval of 2 pages: snapshots at 8, 16, 24, ... plus the tail. */
  private static final int INTERVAL = 2;

  private FakeKvMemory memory;
  private KvPattern pattern;

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private RankCache cache(int devicePages, int hostPages) {
    memory = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), devicePages, hostPages);
    pattern = new KvPattern(memory.layout);
    CacheConfig config =
        CacheConfig.of(PAGE, devicePages, hostPages)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withEvictionPolicy(EvictionPolicy.LRU)
            .withSnapshots(1, INTERVAL);
    return RankCache.withMemory(config, memory.device, memory.host, memory.engine);
  }

  private static int[] tokens(int n, int salt) {
    return IntStream.range(0, n).map(i -> i * 7 + salt + 1).toArray();
  }

  /** The state byte a snapshot at {@code position} holds in layer {@code layer}'s block. */
  private static byte state(int position, int layer) {
    return (byte) (position * 2 + layer + 1);
  }

  /** Admits from nothing, allocates, writes the KV of the own full pages. */
  private void compute(RankCache cache, long id, int[] tokens) {
    cache.admit(id, tokens, RequestOptions.DEFAULT.withLoadBackQuota(0));
    cache.allocateTokens(id, tokens.length);
    writeOwn(cache, id, tokens);
  }

  private void writeOwn(RankCache cache, long id, int[] tokens) {
    RequestState r = cache.rooms().requests().get(id);
    long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
    int pages = Math.min(r.ownCount(), (tokens.length - r.prefixLength) / PAGE);
    for (int i = 0; i < pages; i++) {
      pattern.write(memory.device, r.own.slot(i), hashes, r.prefixLength / PAGE + i);
    }
  }

  /** What the runner does for a step over {@code (from, to]}: every layer of each snapshot. */
  private List<SnapshotTarget> writeStates(RankCache cache, long id, int from, int to) {
    List<SnapshotTarget> taken = cache.stepSnapshots(id, from, to);
    for (SnapshotTarget t : taken) {
      for (int layer = 0; layer < memory.layout.layers(); layer++) {
        memory.device.blockBytes(t.slots()[0], layer)[0] = state(t.position(), layer);
      }
    }
    return taken;
  }

  private void assertHostState(RadixNode n) {
    assertThat(n.hasHostSnapshot()).as("host snapshot of the node ending at %d", n.depth).isTrue();
    for (int layer = 0; layer < memory.layout.layers(); layer++) {
      assertThat(memory.host.blockBytes(n.hostStateSlots()[0], layer)[0])
          .as("layer %d of the host snapshot at %d", layer, n.depth)
          .isEqualTo(state(n.depth, layer));
    }
  }

  private void drain(RankCache cache) {
    memory.engine.completeAll();
    cache.sync();
    CacheInvariants.check(cache);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
  }

  private static void checkBoth(RankCache cache) {
    CacheInvariants.checkChanged(cache);
    CacheInvariants.check(cache);
  }

  /** The nodes from the root down to the one ending at {@code end}. */
  private static List<RadixNode> path(RankCache cache, int[] tokens, int end) {
    RadixNode n = cache.match(0, Arrays.copyOf(tokens, end)).lastHostNode();
    java.util.ArrayList<RadixNode> out = new java.util.ArrayList<>();
    for (; n.parent != null; n = n.parent) {
      out.addFirst(n);
    }
    return out;
  }

  @Test
  void theChainOfSegmentNodesTakesTheBackupWithItsSnapshotsAndAHitResumesFromTheHost() {
    RankCache cache = cache(32, 64);
    int[] t = tokens(22, 0);
    compute(cache, 1, t);
    int hostFree = cache.hostUsage().free();
    assertThat(cache.prepareBackup(1)).isTrue();
    // 5 pages (tokens [0, 20)) and the snapshots at 8 and 16 and the tail at 20.
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 5 - 3);
    checkBoth(cache);
    assertThat(writeStates(cache, 1, 0, 22))
        .extracting(SnapshotTarget::position)
        .containsExactly(8, 16, 20);
    cache.streamLayer(1, 0);
    long submitted = memory.engine.submittedWrites;
    checkBoth(cache);

    cache.finish(1);

    List<RadixNode> chain = path(cache, t, 20);
    assertThat(chain).extracting(n -> n.depth).containsExactly(8, 16, 20);
    for (RadixNode n : chain) {
      assertThat(n.backupState()).isEqualTo(BackupState.PENDING);
      assertThat(n.pendingWrite).isSameAs(chain.get(0).pendingWrite);
      assertThat(n.hasDeviceSnapshot()).isTrue();
      assertThat(n.hasHostSnapshot()).isTrue();
    }
    assertThat(cache.pendingWrites()).as("one ack for the whole chain").isEqualTo(1);
    assertThat(memory.engine.submittedWrites - submitted)
        .as("catch-up of layer 1 and the tail's copy")
        .isEqualTo(2);
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 8);
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    assertThat(cache.stats().preparedRolledBack()).isZero();
    checkBoth(cache);
    drain(cache);
    for (RadixNode n : chain) {
      assertThat(n.backupState()).isEqualTo(BackupState.COMMITTED);
      assertHostState(n);
    }
    CacheInvariants.checkIdle(cache);

    // Device eviction keeps the host snapshots; the next turn resumes at 20 from the host.
    cache.evictDevice(32);
    checkBoth(cache);
    assertThat(chain.get(2).onDevice()).isFalse();
    int[] turn2 = Arrays.copyOf(t, 30);
    for (int i = 22; i < 30; i++) {
      turn2[i] = 5000 + i;
    }
    Admission a = cache.admit(2, turn2);
    assertThat(a.loadedLength()).isEqualTo(20);
    assertThat(a.usableLength()).isEqualTo(20);
    int[] resume = cache.resumeSlots(2);
    assertThat(resume).hasSize(1);
    drain(cache);
    for (int layer = 0; layer < memory.layout.layers(); layer++) {
      assertThat(memory.device.blockBytes(resume[0], layer)[0]).isEqualTo(state(20, layer));
    }
    cache.abort(2);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void withoutAStreamedLayerOneAllLayerBatchCarriesThePagesAndEverySnapshot() {
    RankCache cache = cache(32, 64);
    int[] t = tokens(22, 3);
    compute(cache, 1, t);
    assertThat(cache.prepareBackup(1)).isTrue();
    writeStates(cache, 1, 0, 22);
    long submitted = memory.engine.submittedWrites;
    cache.finish(1);
    assertThat(memory.engine.submittedWrites - submitted).isEqualTo(1);
    assertThat(cache.stats().catchUpLayers()).isEqualTo(2);
    drain(cache);
    for (RadixNode n : path(cache, t, 20)) {
      assertHostState(n);
    }
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aTailTheEndNodeDidNotTakeIsGivenBackAndTheRestGetsOrdinaryBackups() {
    RankCache cache = cache(32, 64);
    int[] t = tokens(22, 5);
    compute(cache, 1, t);
    assertThat(cache.prepareBackup(1)).isTrue();
    writeStates(cache, 1, 0, 22);
    cache.streamLayer(1, 1);
    cache.streamLayer(1, 0);
    // Decode goes on to 30 tokens: the snapshot at 24 and the tail at 28 are the request's.
    int[] longer = Arrays.copyOf(t, 30);
    for (int i = 22; i < 30; i++) {
      longer[i] = 7000 + i;
    }
    cache.allocateTokens(1, 30);
    writeOwn(cache, 1, longer);
    assertThat(writeStates(cache, 1, 22, 30))
        .extracting(SnapshotTarget::position)
        .containsExactly(24, 28);
    int hostFree = cache.hostUsage().free();

    cache.finish(1, longer);

    List<RadixNode> nodes = path(cache, longer, 28);
    assertThat(nodes).extracting(n -> n.depth).containsExactly(8, 16, 20, 24, 28);
    RadixNode at20 = nodes.get(2);
    assertThat(at20.hasDeviceSnapshot()).isFalse();
    assertThat(at20.hasHostSnapshot()).isFalse();
    assertThat(at20.pendingWrite).isSameAs(nodes.get(0).pendingWrite);
    assertThat(nodes.get(3).pendingWrite).isNotSameAs(at20.pendingWrite);
    // The tail's reserved slot came back; [20, 28) was registered with its two snapshots.
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree + 1 - 2 - 2);
    checkBoth(cache);
    drain(cache);
    for (RadixNode n : nodes) {
      assertThat(n.backupState()).isEqualTo(BackupState.COMMITTED);
      if (n != at20) {
        assertHostState(n);
      }
    }
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aDuplicateInsertRollsTheWholeBackupBackAndRetiresItsStreamedSnapshotSlots() {
    RankCache cache = cache(64, 64);
    int[] t = tokens(22, 7);
    compute(cache, 1, t);
    compute(cache, 2, t);
    int hostFree = cache.hostUsage().free();
    assertThat(cache.prepareBackup(1)).isTrue();
    assertThat(cache.prepareBackup(2)).isTrue();
    writeStates(cache, 1, 0, 22);
    writeStates(cache, 2, 0, 22);
    cache.streamLayer(1, 0);
    cache.streamLayer(2, 0);
    cache.finish(1);
    checkBoth(cache);
    cache.finish(2);
    checkBoth(cache);
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    assertThat(cache.stats().preparedRolledBack()).isEqualTo(1);
    // Request 2's 8 slots are retired, not free, until the retirement's commit.
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 16);
    drain(cache);
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 8);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void anAbortAfterAStreamRetiresEverySlotAndOneBeforeFreesThemAtOnce() {
    RankCache cache = cache(32, 64);
    int[] t = tokens(22, 9);
    compute(cache, 1, t);
    assertThat(cache.prepareBackup(1)).isTrue();
    writeStates(cache, 1, 0, 22);
    cache.streamLayer(1, 0);
    cache.abort(1);
    checkBoth(cache);
    assertThat(cache.hostUsage().free()).isEqualTo(64 - 8);
    drain(cache);
    assertThat(cache.hostUsage().free()).isEqualTo(64);
    CacheInvariants.checkIdle(cache);

    compute(cache, 2, t);
    assertThat(cache.prepareBackup(2)).isTrue();
    cache.abort(2);
    assertThat(cache.hostUsage().free()).isEqualTo(64);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aFailedCopyRollsTheChainAndItsHostSnapshotsBackAtTheCommit() {
    RankCache cache = cache(32, 64);
    int[] t = tokens(22, 11);
    compute(cache, 1, t);
    assertThat(cache.prepareBackup(1)).isTrue();
    writeStates(cache, 1, 0, 22);
    cache.streamLayer(1, 0);
    cache.finish(1);
    memory.engine.completeAll();
    BitSet failed = new BitSet();
    failed.set(0);
    cache.commits().commitWrites(1, failed);
    checkBoth(cache);
    for (RadixNode n : path(cache, t, 20)) {
      assertThat(n.backupState()).isEqualTo(BackupState.NONE);
      assertThat(n.hasHostSnapshot()).isFalse();
      assertThat(n.hasDeviceSnapshot()).isTrue();
    }
    assertThat(cache.hostUsage().free()).isEqualTo(64);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aCoveredSnapshotThatNoNodeTookRollsTheWholeBackupBack() {
    RankCache cache = cache(32, 64);
    // Class 12's variant refuses the adoption while this rank's copies run: the node at 8 is
    // left without the request's snapshot, which the backup covers, so no node may take it.
    CacheTestHooks.decideSnapshotsFromCopyProgress(cache);
    // An unrelated request's backup whose copy has not finished on this rank.
    compute(cache, 9, tokens(6, 900));
    cache.finish(9);
    assertThat(cache.pendingWrites()).isEqualTo(1);
    int[] t = tokens(22, 13);
    compute(cache, 1, t);
    assertThat(cache.prepareBackup(1)).isTrue();
    writeStates(cache, 1, 0, 22);
    cache.streamLayer(1, 0);
    cache.finish(1);
    checkBoth(cache);
    assertThat(CacheTestHooks.firedVariants(cache)).isPositive();
    assertThat(cache.stats().preparedAttached()).isZero();
    assertThat(cache.stats().preparedRolledBack()).isEqualTo(1);
    drain(cache);
    for (RadixNode n : path(cache, t, 20)) {
      assertThat(n.backupState()).isNotEqualTo(BackupState.PENDING);
      if (n.hasDeviceSnapshot()) {
        // The ordinary registration that followed the rollback carried it.
        assertHostState(n);
      }
    }
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aChunkInsertAttachesTheChainWithTheTailAndTheRequestGoesOnWithANewTail() {
    RankCache cache = cache(32, 64);
    int[] t = tokens(22, 15);
    compute(cache, 1, t);
    assertThat(cache.prepareBackup(1)).isTrue();
    writeStates(cache, 1, 0, 22);
    cache.streamLayer(1, 0);
    cache.cacheChunk(1, 20);
    checkBoth(cache);
    List<RadixNode> chain = path(cache, t, 20);
    assertThat(chain).extracting(n -> n.depth).containsExactly(8, 16, 20);
    assertThat(chain.get(2).hasHostSnapshot()).isTrue();
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    drain(cache);
    for (RadixNode n : chain) {
      assertHostState(n);
    }
    cache.finish(1);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  /**
   * A request whose match goes past its deepest snapshot recomputes the tree's pages there; a
   * backup prepared over them could attach to no node (the insert finds the tree's), so none is
   * prepared until a chunk insert has taken the prefix past the match.
   */
  @Test
  void aRequestThatRecomputesMatchedPagesPreparesNoBackupUntilItsChunksPassTheMatch() {
    RankCache cache = cache(64, 64);
    int[] t = tokens(22, 21);
    compute(cache, 1, t);
    writeStates(cache, 1, 0, 22);
    cache.finish(1);
    drain(cache);
    int[] u = Arrays.copyOf(t, 30);
    for (int i = 14; i < u.length; i++) {
      u[i] = 5000 + i;
    }
    Admission a = cache.admit(2, u, RequestOptions.DEFAULT.withLoadBackQuota(0));
    assertThat(a.matchedLength()).isEqualTo(12);
    assertThat(a.usableLength()).isEqualTo(8);
    cache.allocateTokens(2, u.length);
    writeOwn(cache, 2, u);
    int hostFree = cache.hostUsage().free();
    assertThat(cache.prepareBackup(2)).isFalse();
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree);
    writeStates(cache, 2, 8, 16);
    cache.cacheChunk(2, 16);
    checkBoth(cache);
    assertThat(cache.prepareBackup(2)).isTrue();
    writeStates(cache, 2, 16, u.length);
    cache.streamLayer(2, 0);
    cache.finish(2);
    checkBoth(cache);
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    assertThat(cache.stats().preparedRolledBack()).isZero();
    drain(cache);
    for (RadixNode n : path(cache, u, 28)) {
      if (n.depth > 16) {
        assertHostState(n);
      }
    }
    CacheInvariants.checkIdle(cache);
  }
}
