package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.TransferFailedException;
import java.util.BitSet;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Write policies, the commit protocol, split of pending backups, write-back and load-back. */
class BackupAndLoadTest {
  private FakeKvMemory memory;
  private KvPattern pattern;

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private RankCache cache(int pageSize, int devicePages, int hostPages, WritePolicy write) {
    memory = new FakeKvMemory(FakeKvMemory.smallLayout(pageSize), devicePages, hostPages);
    pattern = new KvPattern(memory.layout);
    CacheConfig config =
        CacheConfig.of(pageSize, devicePages, hostPages)
            .withWritePolicy(write)
            .withEvictionPolicy(EvictionPolicy.LRU);
    return RankCache.withMemory(config, memory.device, memory.host, memory.engine);
  }

  /** Admits, allocates, writes the KV pattern and finishes. */
  private void serve(RankCache cache, long id, int[] tokens) {
    cache.admit(id, tokens, RequestOptions.DEFAULT.withLoadBackQuota(0));
    cache.allocateTokens(id, tokens.length);
    writeOwn(cache, id, tokens);
    cache.finish(id);
    CacheInvariants.check(cache);
  }

  private void writeOwn(RankCache cache, long id, int[] tokens) {
    RequestState r = cache.rooms().requests().get(id);
    long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
    for (int i = 0; i < r.ownCount(); i++) {
      pattern.write(
          memory.device, r.own.slot(i), hashes, r.prefixLength / memory.layout.pageSize() + i);
    }
  }

  private RadixNode node(RankCache cache, int[] tokens) {
    return cache.match(0, tokens).lastDeviceNode();
  }

  @Test
  void writeThroughRegistersAtInsertAndCommitsOnlyWhatIsReady() {
    RankCache cache = cache(1, 16, 32, WritePolicy.WRITE_THROUGH);
    serve(cache, 1, new int[] {1, 2, 3, 4});
    serve(cache, 2, new int[] {7, 8});
    assertThat(cache.outstandingOperations()).isEqualTo(2);
    RadixNode a = node(cache, new int[] {1, 2, 3, 4});
    assertThat(a.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.commits().readyWritePrefix()).isZero();
    assertThat(cache.sync()).isZero();
    assertThat(a.backupState()).isEqualTo(BackupState.PENDING);
    memory.engine.completeWrite(false);
    assertThat(cache.commits().readyWritePrefix()).isEqualTo(1);
    cache.commits().commitWrites(1);
    assertThat(a.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(cache.outstandingOperations()).isEqualTo(1);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    memory.engine.completeAll();
    cache.sync();
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void selectiveWriteThroughWaitsForTheThreshold() {
    RankCache cache = cache(2, 16, 32, WritePolicy.WRITE_THROUGH_SELECTIVE);
    int[] a = {1, 2, 3, 4};
    serve(cache, 1, a);
    assertThat(node(cache, a).backupState()).isEqualTo(BackupState.NONE);
    serve(cache, 2, a);
    assertThat(node(cache, a).backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.pendingWrites()).isEqualTo(1);
  }

  @Test
  void splitOfAPendingNodeCopiesTheStateAndTheAckCommitsBothHalves() {
    RankCache cache = cache(1, 16, 32, WritePolicy.WRITE_THROUGH);
    int[] a = {1, 2, 3, 4, 5, 6};
    serve(cache, 1, a);
    RadixNode whole = node(cache, a);
    RadixNode top = cache.match(0, new int[] {1, 2, 3, 9}).lastDeviceNode();
    assertThat(top).isNotSameAs(whole);
    assertThat(top.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(whole.backupState()).isEqualTo(BackupState.PENDING);
    assertThat(cache.pendingWrites()).isEqualTo(1);
    assertThatThrownBy(() -> cache.backup(top))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("PENDING");
    memory.engine.completeWrite(false);
    cache.sync();
    assertThat(top.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(whole.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void failedCopyIsRolledBackAndSoIsTheChildRegisteredOnTopOfIt() {
    RankCache cache = cache(1, 16, 32, WritePolicy.WRITE_THROUGH);
    int[] a = {1, 2, 3};
    int[] ab = {1, 2, 3, 4, 5};
    serve(cache, 1, a);
    serve(cache, 2, ab);
    RadixNode child = node(cache, ab);
    assertThat(child.backupState()).isEqualTo(BackupState.PENDING);
    memory.engine.completeWrite(true);
    memory.engine.completeWrite(false);
    assertThat(cache.commits().readyWritePrefix()).isEqualTo(2);
    BitSet failed = cache.commits().localWriteFailures(2);
    assertThat(failed.get(0)).isTrue();
    assertThat(failed.get(1)).isFalse();
    cache.commits().commitWrites(2, failed);
    assertThat(node(cache, a).backupState()).isEqualTo(BackupState.NONE);
    assertThat(child.backupState()).isEqualTo(BackupState.NONE);
    assertThat(cache.hostUsage().free()).isEqualTo(32);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void writeBackBacksUpOnlyWhenEvictingAndFreesAtTheCommit() {
    RankCache cache = cache(1, 8, 16, WritePolicy.WRITE_BACK);
    int[] a = {1, 2, 3, 4, 5, 6};
    serve(cache, 1, a);
    assertThat(cache.outstandingOperations()).isZero();
    cache.admit(2, new int[] {9, 9, 9, 9});
    assertThatThrownBy(() -> cache.allocate(2, 4))
        .isInstanceOf(PoolExhaustedException.class)
        .hasMessageContaining("awaiting write-back")
        .satisfies(e -> assertThat(((PoolExhaustedException) e).awaitingWriteBack()).isEqualTo(6));
    assertThat(node(cache, a).backupState()).isEqualTo(BackupState.PENDING);
    memory.engine.completeAll();
    cache.sync();
    RadixNode evicted = cache.match(0, a).lastHostNode();
    assertThat(evicted.onDevice()).isFalse();
    assertThat(evicted.backupState()).isEqualTo(BackupState.COMMITTED);
    cache.allocate(2, 4);
    cache.abort(2);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    CacheInvariants.checkIdle(cache);
  }

  private RankCache cacheWithEvictedPrefix(int[] a) {
    RankCache cache = cache(2, 8, 32, WritePolicy.WRITE_THROUGH);
    serve(cache, 1, a);
    memory.engine.completeAll();
    cache.sync();
    assertThat(cache.evictDevice(8)).isEqualTo(a.length / 2);
    assertThat(cache.match(0, a).hostHitLength()).isEqualTo(a.length);
    return cache;
  }

  @Test
  void evictedNodeReAdoptsTheRequestsPagesAtInsert() {
    int[] a = {1, 2, 3, 4, 5, 6};
    RankCache cache = cacheWithEvictedPrefix(a);
    Admission adm = cache.admit(2, a, RequestOptions.DEFAULT.withLoadBackQuota(0));
    assertThat(adm.hostHitLength()).isEqualTo(6);
    assertThat(adm.loadedLength()).isZero();
    cache.allocateTokens(2, 6);
    writeOwn(cache, 2, a);
    assertThat(cache.finish(2)).isZero();
    RadixNode n = node(cache, a);
    assertThat(n.onDevice()).isTrue();
    assertThat(n.backupState()).isEqualTo(BackupState.COMMITTED);
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void loadBackRespectsThresholdAndQuotaAndLoadsLayerByLayer() {
    int[] a = {1, 2, 3, 4, 5, 6};
    RankCache cache = cacheWithEvictedPrefix(a);
    Admission skipped = cache.admit(2, a, RequestOptions.DEFAULT.withLoadBackQuota(2));
    assertThat(skipped.loadedLength()).isZero();
    cache.abort(2);
    Admission loaded = cache.admit(3, a, RequestOptions.DEFAULT.withLoadBackQuota(3));
    assertThat(loaded.loadedLength()).isEqualTo(6);
    assertThat(loaded.devicePrefixLength()).isEqualTo(6);
    assertThat(loaded.pendingLoads()).hasSize(1);
    LoadBack load = loaded.pendingLoads().get(0);
    assertThat(load.layers()).isEqualTo(2);
    assertThat(cache.pendingLoads()).isEqualTo(1);
    // Another request matching the chain now shares the pages and must wait for the same load.
    Admission sharer = cache.admit(4, a);
    assertThat(sharer.pendingLoads()).containsExactly(load);
    assertThat(sharer.loadedLength()).isZero();
    memory.engine.completeLoad(false);
    assertThat(cache.isLoadLayerReady(load, 0)).isTrue();
    assertThat(cache.isLoadLayerReady(load, 1)).isFalse();
    assertThat(cache.commits().readyLoadPrefix()).isZero();
    memory.engine.completeLoad(false);
    assertThat(cache.commits().readyLoadPrefix()).isEqualTo(1);
    cache.sync();
    assertThat(load.isCommitted()).isTrue();
    assertThat(load.failed()).isFalse();
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    cache.finish(3);
    cache.finish(4);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void loadBackBelowTheThresholdIsSkipped() {
    int[] a = {1, 2, 3, 4};
    FakeKvMemory m = new FakeKvMemory(FakeKvMemory.smallLayout(2), 8, 32);
    RankCache cache =
        RankCache.withMemory(
            CacheConfig.of(2, 8, 32).withLoadBackThreshold(3), m.device, m.host, m.engine);
    memory = m;
    pattern = new KvPattern(m.layout);
    serve(cache, 1, a);
    m.engine.completeAll();
    cache.sync();
    cache.evictDevice(8);
    assertThat(cache.admit(2, a).loadedLength()).isZero();
    cache.abort(2);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void loadBackIsAllOrNothingWhenTheDeviceIsShort() {
    int[] a = {1, 2, 3, 4, 5, 6};
    RankCache cache = cacheWithEvictedPrefix(a);
    cache.admit(2, new int[] {8, 8});
    cache.allocate(2, 6);
    Admission adm = cache.admit(3, a);
    assertThat(adm.loadedLength()).isZero();
    assertThat(adm.hostHitLength()).isEqualTo(6);
    assertThat(cache.deviceUsage().free()).isEqualTo(2);
    cache.abort(2);
    cache.abort(3);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void failedLoadNeverBecomesVisibleAndLeavesNothingBehind() {
    int[] a = {1, 2, 3, 4, 5, 6};
    RankCache cache = cacheWithEvictedPrefix(a);
    Admission adm = cache.admit(2, a);
    LoadBack load = adm.pendingLoads().get(0);
    memory.engine.completeLoad(true);
    memory.engine.completeLoad(false);
    assertThatThrownBy(() -> cache.awaitLoadLayer(load, 0))
        .isInstanceOf(TransferFailedException.class);
    // A request computed on top of the loading chain before the failure was committed.
    int[] longer = {1, 2, 3, 4, 5, 6, 7, 8};
    cache.admit(3, longer);
    cache.allocateTokens(3, 8);
    cache.finish(3);
    assertThat(cache.match(0, longer).lastDeviceNode().backupState())
        .isEqualTo(BackupState.PENDING);
    cache.sync();
    assertThat(load.failed()).isTrue();
    // The leaf computed on bad pages is untrusted: its backup commits as a rollback.
    memory.engine.completeAll();
    cache.sync();
    assertThat(cache.match(0, a).deviceLength()).isZero();
    assertThat(cache.match(0, longer).hostHitLength()).isZero();
    cache.finish(2);
    CacheInvariants.checkIdle(cache);
    // The host copy went with the failed load (the ranks cannot tell a failed copy from host
    // bytes gone bad): the prefix is recomputed, and what the tree still holds is right.
    assertThat(cache.match(0, a).hostHitLength()).isZero();
    assertThat(cache.match(0, a).matchedLength()).isZero();
    Admission again = cache.admit(4, a);
    assertThat(again.loadedLength()).isZero();
    assertThat(pattern.verifyTree(cache, memory.device, memory.host)).isNull();
    cache.abort(4);
    CacheInvariants.checkIdle(cache);
  }
}
