package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.Arrays;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Prepared backups (CACHE.md §11) on one cache whose copies complete when the test says:
 * the marker lifecycle attach -> commit and attach -> rollback, the catch-up batch, the split of
 * an attached node, double attach, write-through interplay, chunked prefill, refusals and bad
 * calls. Host bytes are verified after every commit, so a catch-up that missed a layer fails.
 */
class PreparedBackupTest {
  private static final int PAGE = 2;
  private static final int[] A = {1, 2, 3, 4};
  private static final int[] B = {1, 2, 3, 4, 5, 6, 7, 8};

  private FakeKvMemory memory;
  private KvPattern pattern;

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private RankCache cache(int devicePages, int hostPages, WritePolicy write) {
    memory = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), devicePages, hostPages);
    pattern = new KvPattern(memory.layout);
    CacheConfig config =
        CacheConfig.of(PAGE, devicePages, hostPages)
            .withWritePolicy(write)
            .withEvictionPolicy(EvictionPolicy.LRU);
    return RankCache.withMemory(config, memory.device, memory.host, memory.engine);
  }

  /** Admits without load-back, allocates pages for {@code length} tokens, writes their KV. */
  private void compute(RankCache cache, long id, int[] tokens, int length) {
    if (!cache.isActive(id)) {
      cache.admit(id, tokens, RequestOptions.DEFAULT.withLoadBackQuota(0));
    }
    cache.allocateTokens(id, length);
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

  private void serve(RankCache cache, long id, int[] tokens) {
    compute(cache, id, tokens, tokens.length);
    cache.finish(id);
  }

  private void drain(RankCache cache) {
    memory.engine.completeAll();
    cache.sync();
    CacheInvariants.check(cache);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
  }

  private static RadixNode node(RankCache cache, int[] tokens) {
    return cache.match(0, tokens).lastDeviceNode();
  }

  /** A cache holding {@link #A} with a committed backup, so that nodes below it can attach. */
  private RankCache withCommittedPrefix(WritePolicy write) {
    RankCache cache = cache(16, 32, write);
    serve(cache, 1, A);
    if (write != WritePolicy.WRITE_THROUGH) {
      assertThat(cache.backup(node(cache, A))).isTrue();
    }
    drain(cache);
    assertThat(node(cache, A).backupState()).isEqualTo(BackupState.COMMITTED);
    return cache;
  }

  @Test
  void attachedBackupCommitsItsStreamedAndCatchUpLayersAsOneAck() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    int hostFree = cache.hostUsage().free();
    assertThat(cache.prepareBackup(2)).isTrue();
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 2);
    cache.streamLayer(2, 0);
    long submitted = memory.engine.submittedWrites;
    CacheInvariants.check(cache);

    cache.finish(2);

    RadixNode b = node(cache, B);
    assertThat(b.prefixLength()).isEqualTo(8);
    assertThat(b.tokenLength()).isEqualTo(4);
    assertThat(b.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.pendingWrites()).as("one ack for the attached backup").isEqualTo(1);
    assertThat(memory.engine.submittedWrites - submitted).as("catch-up of layer 1").isEqualTo(1);
    assertThat(cache.hostUsage().free())
        .as("the reserved slots became the node's")
        .isEqualTo(hostFree - 2);
    CacheStats stats = cache.stats();
    assertThat(stats.preparedAttached()).isEqualTo(1);
    assertThat(stats.catchUpLayers()).isEqualTo(1);
    assertThat(stats.streamedLayers()).isEqualTo(1);
    assertThat(stats.preparedRolledBack()).isZero();
    CacheInvariants.check(cache);
    // The ack is ready only when both the streamed and the catch-up copy are done.
    memory.engine.completeWrite(false);
    assertThat(cache.commits().readyWritePrefix()).isZero();
    memory.engine.completeWrite(false);
    assertThat(cache.commits().readyWritePrefix()).isEqualTo(1);
    cache.sync();
    assertThat(b.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(cache.stats().backupsCommitted()).isEqualTo(2);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    CacheInvariants.checkIdle(cache);
    // And the host copy loads back byte for byte.
    cache.evictDevice(16);
    Admission again = cache.admit(3, B);
    assertThat(again.loadedLength()).isEqualTo(8);
    memory.engine.completeAll();
    cache.sync();
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    cache.finish(3);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void anAttachedBackupWhoseCopyFailedOnAnyRankRollsBackOnEveryRankAtTheCommit() {
    // Two ranks: rank 0's copies succeed, rank 1's streamed layer fails. The failure sets are
    // OR-ed as the rank protocol does, and both roll the attached backup back at the commit.
    RankCache[] ranks = new RankCache[2];
    FakeKvMemory[] memories = new FakeKvMemory[2];
    for (int i = 0; i < 2; i++) {
      ranks[i] = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
      memories[i] = memory;
      compute(ranks[i], 2, B, B.length);
      assertThat(ranks[i].prepareBackup(2)).isTrue();
      ranks[i].streamLayer(2, 0);
      ranks[i].finish(2);
    }
    memories[0].engine.completeAll();
    memories[1].engine.completeWrite(true);
    memories[1].engine.completeAll();
    assertThat(ranks[1].replicaDigest()).isEqualTo(ranks[0].replicaDigest());
    java.util.BitSet failed = ranks[0].commits().localWriteFailures(1);
    assertThat(failed.isEmpty()).isTrue();
    failed.or(ranks[1].commits().localWriteFailures(1));
    assertThat(failed.get(0)).isTrue();
    for (int i = 0; i < 2; i++) {
      int hostFree = ranks[i].hostUsage().free();
      ranks[i].commits().commitWrites(1, failed);
      RadixNode b = node(ranks[i], B);
      assertThat(b.backupState()).isEqualTo(BackupState.NONE);
      assertThat(ranks[i].hostUsage().free()).isEqualTo(hostFree + 2);
      assertThat(ranks[i].stats().backupsFailed()).isEqualTo(1);
      CacheInvariants.checkIdle(ranks[i]);
    }
    assertThat(ranks[1].replicaDigest()).isEqualTo(ranks[0].replicaDigest());
  }

  @Test
  void withoutStreamedLayersTheCatchUpIsOneAllLayerBatch() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    assertThat(cache.prepareBackup(2)).isTrue();
    long submitted = memory.engine.submittedWrites;
    cache.finish(2);
    assertThat(memory.engine.submittedWrites - submitted).isEqualTo(1);
    assertThat(cache.stats().catchUpLayers()).isEqualTo(2);
    assertThat(node(cache, B).backupState()).isEqualTo(BackupState.PENDING);
    drain(cache);
    assertThat(node(cache, B).backupState()).isEqualTo(BackupState.COMMITTED);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void fullyStreamedBackupNeedsNoCatchUp() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    assertThat(cache.prepareBackup(2)).isTrue();
    cache.streamLayer(2, 1);
    cache.streamLayer(2, 0);
    long submitted = memory.engine.submittedWrites;
    cache.finish(2);
    assertThat(memory.engine.submittedWrites).isEqualTo(submitted);
    assertThat(cache.stats().catchUpLayers()).isZero();
    drain(cache);
    assertThat(node(cache, B).backupState()).isEqualTo(BackupState.COMMITTED);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aDuplicateInsertRollsBackAndRetiresTheStreamedSlotsUntilTheirCommit() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    compute(cache, 3, B, B.length);
    assertThat(cache.prepareBackup(2)).isTrue();
    assertThat(cache.prepareBackup(3)).isTrue();
    cache.streamLayer(2, 0);
    cache.streamLayer(3, 1);
    cache.finish(2);
    RadixNode b = node(cache, B);
    WriteAck attached = b.pendingWrite;
    int hostFree = cache.hostUsage().free();

    cache.finish(3);

    // The node already holds a pending backup: the predicate is false, request 3 rolls back.
    assertThat(b.pendingWrite).isSameAs(attached);
    assertThat(attached.nodes).containsExactly(b);
    assertThat(cache.stats().preparedRolledBack()).isEqualTo(1);
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    assertThat(cache.pendingWrites()).as("the attach and the retirement").isEqualTo(2);
    assertThat(cache.hostUsage().free())
        .as("retired slots stay held until their commit")
        .isEqualTo(hostFree);
    CacheInvariants.check(cache);
    drain(cache);
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree + 2);
    assertThat(cache.stats().backupsCommitted()).as("retirements are not backups").isEqualTo(2);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void attachingASecondBackupToAPendingNodeThrows() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    compute(cache, 3, B, B.length);
    cache.prepareBackup(2);
    cache.prepareBackup(3);
    cache.finish(2);
    RadixNode b = node(cache, B);
    assertThat(b.backupState()).isEqualTo(BackupState.PENDING);
    RequestState r3 = cache.rooms().requests().get(3L);

    assertThatThrownBy(() -> cache.rooms().preparedBackups().attach(r3, b))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("node id=" + b.id())
        .hasMessageContaining("PENDING");
    // Nothing changed: the request still owns its backup, the node its single ack.
    assertThat(r3.prepared).isNotNull();
    assertThat(cache.pendingWrites()).isEqualTo(1);
    CacheInvariants.check(cache);
    cache.abort(3);
    assertThat(cache.stats().preparedRolledBack()).isEqualTo(1);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void splitCopiesTheAttachedMarkerToBothHalvesAndOneCommitCoversThem() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    int[] long12 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    compute(cache, 2, long12, long12.length);
    cache.prepareBackup(2);
    cache.streamLayer(2, 1);
    cache.finish(2);
    RadixNode bottom = node(cache, long12);
    WriteAck ack = bottom.pendingWrite;

    RadixNode top = cache.match(0, new int[] {1, 2, 3, 4, 5, 6, 0, 0}).lastDeviceNode();

    assertThat(top).isNotSameAs(bottom);
    assertThat(top.prefixLength()).isEqualTo(6);
    assertThat(top.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(bottom.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(top.pendingWrite).isSameAs(ack);
    assertThat(ack.nodes).containsExactly(top, bottom);
    assertThat(cache.pendingWrites()).isEqualTo(1);
    CacheInvariants.check(cache);
    drain(cache);
    assertThat(top.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(bottom.backupState()).isEqualTo(BackupState.COMMITTED);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void abortRollsBackAndFreesTheSlotsAtTheRetirementCommit() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    int hostFree = cache.hostUsage().free();
    compute(cache, 2, B, B.length);
    cache.prepareBackup(2);
    cache.streamLayer(2, 0);
    cache.abort(2);
    assertThat(cache.pendingWrites()).isEqualTo(1);
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 2);
    assertThat(cache.match(0, B).deviceLength()).isEqualTo(4);
    CacheInvariants.check(cache);
    drain(cache);
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void abortBeforeAnyStreamFreesTheSlotsAtOnce() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    int hostFree = cache.hostUsage().free();
    compute(cache, 2, B, B.length);
    cache.prepareBackup(2);
    cache.abort(2);
    assertThat(cache.outstandingOperations()).isZero();
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aParentRegisteredByTheSameFinishCountsAsBackedUp() {
    // Selective write-through, threshold 2: the prefix gets its second hit at B's finish.
    RankCache cache = cache(16, 32, WritePolicy.WRITE_THROUGH_SELECTIVE);
    serve(cache, 1, A);
    assertThat(node(cache, A).backupState()).isEqualTo(BackupState.NONE);
    compute(cache, 2, B, B.length);
    cache.prepareBackup(2);
    cache.streamLayer(2, 0);
    cache.finish(2);
    assertThat(node(cache, A).backupState()).isEqualTo(BackupState.PENDING);
    assertThat(node(cache, B).backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aParentWithoutBackupMakesThePreparedBackupRollBack() {
    memory = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), 16, 32);
    pattern = new KvPattern(memory.layout);
    RankCache cache =
        RankCache.withMemory(
            CacheConfig.of(PAGE, 16, 32)
                .withWritePolicy(WritePolicy.WRITE_THROUGH_SELECTIVE)
                .withWriteThroughThreshold(3),
            memory.device,
            memory.host,
            memory.engine);
    serve(cache, 1, A);
    int hostFree = cache.hostUsage().free();
    compute(cache, 2, B, B.length);
    cache.prepareBackup(2);
    cache.streamLayer(2, 1);
    cache.finish(2);
    assertThat(node(cache, A).backupState()).isEqualTo(BackupState.NONE);
    assertThat(node(cache, B).backupState()).isEqualTo(BackupState.NONE);
    assertThat(cache.stats().preparedRolledBack()).isEqualTo(1);
    assertThat(cache.pendingWrites()).as("the retirement only").isEqualTo(1);
    CacheInvariants.check(cache);
    drain(cache);
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void writeThroughNeverRegistersTheAttachedNodeAgainButBacksUpWhatFollows() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    assertThat(cache.prepareBackup(2)).isTrue();
    cache.streamLayer(2, 0);
    int[] output = Arrays.copyOf(B, 12);
    Arrays.fill(output, 8, 12, 42);
    cache.allocateTokens(2, output.length);
    writeOwn(cache, 2, output);
    long registered = cache.stats().backupsRegistered();

    cache.finish(2, output);

    RadixNode b = node(cache, B);
    RadixNode tail = node(cache, output);
    assertThat(b.prefixLength()).as("the insert is split at the backup's end").isEqualTo(8);
    assertThat(tail.prefixLength()).isEqualTo(12);
    assertThat(tail.parent).isSameAs(b);
    assertThat(b.pendingWrite.nodes).containsExactly(b);
    assertThat(tail.pendingWrite.nodes).containsExactly(tail);
    assertThat(b.pendingWrite.sequence).isLessThan(tail.pendingWrite.sequence);
    assertThat(cache.stats().backupsRegistered() - registered).isEqualTo(2);
    assertThat(cache.pendingWrites()).isEqualTo(2);
    drain(cache);
    assertThat(tail.backupState()).isEqualTo(BackupState.COMMITTED);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void chunkedPrefillResolvesEachChunksBackupAtItsInsert() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    int[] prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    compute(cache, 2, prompt, 8);
    assertThat(cache.prepareBackup(2)).isTrue();
    cache.streamLayer(2, 0);
    cache.cacheChunk(2, 8);
    RadixNode first = node(cache, B);
    assertThat(first.prefixLength()).isEqualTo(8);
    assertThat(first.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.rooms().requests().get(2L).prepared).isNull();

    compute(cache, 2, prompt, 12);
    assertThat(cache.prepareBackup(2)).isTrue();
    cache.streamLayer(2, 1);
    cache.finish(2);

    assertThat(node(cache, prompt).backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.stats().preparedAttached()).isEqualTo(2);
    assertThat(cache.pendingWrites()).isEqualTo(2);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void aChunkShortOfTheBackupRollsItBack() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    cache.prepareBackup(2);
    cache.streamLayer(2, 0);
    cache.cacheChunk(2, 6);
    assertThat(cache.stats().preparedRolledBack()).isEqualTo(1);
    assertThat(cache.rooms().requests().get(2L).prepared).isNull();
    // The inserted page went the ordinary write-through way.
    assertThat(node(cache, new int[] {1, 2, 3, 4, 5, 6}).backupState())
        .isEqualTo(BackupState.PENDING);
    cache.finish(2);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void prepareExtendsOverPagesAllocatedBeforeTheFirstStreamAndNotAfter() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    int[] prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    int hostFree = cache.hostUsage().free();
    compute(cache, 2, prompt, 6);
    assertThat(cache.prepareBackup(2)).isTrue();
    assertThat(cache.prepareBackup(2)).as("idempotent").isTrue();
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 1);
    compute(cache, 2, prompt, 10);
    assertThat(cache.prepareBackup(2)).isTrue();
    assertThat(cache.hostUsage().free()).isEqualTo(hostFree - 3);
    assertThat(cache.rooms().requests().get(2L).prepared.pages).isEqualTo(3);
    cache.streamLayer(2, 0);
    compute(cache, 2, prompt, 12);
    assertThatThrownBy(() -> cache.prepareBackup(2))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("request id=2")
        .hasMessageContaining("streamed layers [0]");
    // The three-page backup still attaches to a node split at its end.
    cache.finish(2);
    assertThat(cache.match(0, Arrays.copyOf(prompt, 10)).lastDeviceNode().backupState())
        .isEqualTo(BackupState.PENDING);
    assertThat(cache.stats().preparedAttached()).isEqualTo(1);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void prepareBackupRefusesWhatCannotBeBackedUp() {
    RankCache writeBack = cache(16, 32, WritePolicy.WRITE_BACK);
    compute(writeBack, 1, A, A.length);
    assertThat(writeBack.prepareBackup(1)).as("write_back").isFalse();
    writeBack.abort(1);

    FakeKvMemory deviceOnly = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), 16, 0);
    RankCache noHost = RankCache.withMemory(CacheConfig.of(PAGE, 16, 0), deviceOnly.device);
    noHost.admit(1, A);
    noHost.allocateTokens(1, A.length);
    assertThat(noHost.prepareBackup(1)).as("no host tier").isFalse();
    noHost.abort(1);

    RankCache small = cache(16, 3, WritePolicy.WRITE_THROUGH);
    compute(small, 1, B, B.length);
    assertThat(small.prepareBackup(1)).as("host smaller than the pages").isFalse();
    assertThat(small.hostUsage().free()).isEqualTo(3);
    small.abort(1);
    CacheInvariants.checkIdle(small);

    RankCache cache = cache(16, 32, WritePolicy.WRITE_THROUGH);
    compute(cache, 1, new int[] {5}, 1);
    assertThat(cache.prepareBackup(1)).as("no full page").isFalse();
    assertThatThrownBy(() -> cache.prepareBackup(99)).isInstanceOf(UnknownRequestException.class);
    cache.abort(1);
    assertThat(cache.stats().preparedBackups()).isZero();
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void prepareEvictsHostLeavesWhenTheHostIsShort() {
    RankCache cache = cache(16, 4, WritePolicy.WRITE_THROUGH);
    serve(cache, 1, A);
    drain(cache);
    cache.evictDevice(16);
    assertThat(cache.hostUsage().evictable()).isEqualTo(2);
    compute(cache, 2, new int[] {7, 7, 7, 7, 7, 7, 7, 7}, 8);
    assertThat(cache.prepareBackup(2)).isTrue();
    assertThat(cache.stats().hostEvictions()).isEqualTo(2);
    assertThat(cache.match(0, A).hostHitLength()).isZero();
    cache.abort(2);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void streamLayerRejectsBadCallsNamingTheValue() {
    RankCache cache = withCommittedPrefix(WritePolicy.WRITE_THROUGH);
    compute(cache, 2, B, B.length);
    assertThatThrownBy(() -> cache.streamLayer(2, 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no prepared backup");
    cache.prepareBackup(2);
    assertThatThrownBy(() -> cache.streamLayer(2, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("layer=2")
        .hasMessageContaining("0..1");
    assertThatThrownBy(() -> cache.streamLayer(2, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("layer=-1");
    cache.streamLayer(2, 1);
    assertThatThrownBy(() -> cache.streamLayer(2, 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("layer=1 was streamed already");
    assertThatThrownBy(() -> cache.streamLayer(77, 0)).isInstanceOf(UnknownRequestException.class);
    assertThat(cache.stats().streamedLayers()).isEqualTo(1);
    cache.finish(2);
    drain(cache);
    CacheInvariants.checkIdle(cache);
  }
}
