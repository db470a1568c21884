package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.L3PrefetchPolicy;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The L3 tier's state machines on hand-written fakes: backups under host protection with the
 * agreed commit, and prefetches from probe to insertion, with ranks whose shards, speeds and
 * clocks differ. Every multi-rank step goes through {@link L3Rank#sync}, which also checks the
 * invariants and that the replica digests stay equal.
 */
class L3TierTest {
  private static final L3Config L3 = L3Config.DEFAULTS.withPrefetchThreshold(L3Rank.PAGE);

  private static int[] tokens(int length, int salt) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = 1 + (i * 7 + salt * 131) % 1000;
    }
    return t;
  }

  private static L3Rank rank(FakeKvStore store, L3Config l3) {
    return new L3Rank(0, 1, store, l3, 32, 64);
  }

  private static RadixNode nodeAt(RankCache cache, int[] tokens) {
    return cache.match(0, tokens).lastHostNode();
  }

  /** Serves {@code tokens} on each rank and commits the host backups and the L3 writes. */
  private static void populate(int[] tokens, L3Rank... ranks) {
    for (L3Rank r : ranks) {
      r.serve(1, tokens);
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      r.executor.runAll();
    }
    L3Rank.sync(ranks);
  }

  // ---------------------------------------------------------------- backups

  @Test
  void aHostCommittedNodeIsWrittenAndItsHostCopyProtectedUntilTheAgreedCommit() {
    FakeKvStore store = new FakeKvStore();
    L3Rank r = rank(store, L3);
    int[] t = tokens(16, 1);
    r.serve(1, t);
    assertThat(r.cache.pendingL3Writes()).isZero();
    L3Rank.sync(r);

    RadixNode node = nodeAt(r.cache, t);
    assertThat(r.cache.pendingL3Writes()).isEqualTo(1);
    assertThat(node.hostRef).isEqualTo(1);
    assertThat(node.l3State).isEqualTo(RadixNode.L3_WRITING);
    // Host eviction must not free the pages the put reads, even once off the device.
    r.cache.evictDevice(4);
    assertThat(node.onDevice()).isFalse();
    assertThat(r.cache.evictHost(4)).isZero();
    assertThat(r.cache.commits().readyL3WritePrefix()).isZero();
    L3Rank.sync(r);
    assertThat(node.hostRef).isEqualTo(1);

    r.executor.runAll();
    assertThat(store.size()).isEqualTo(4);
    assertThat(store.contains(r.key(t, 3))).isTrue();
    assertThat(r.cache.commits().readyL3WritePrefix()).isEqualTo(1);
    L3Rank.sync(r);
    assertThat(node.hostRef).isZero();
    assertThat(node.l3State).isEqualTo(RadixNode.L3_STORED);
    assertThat(r.cache.l3Stats().writesCommitted()).isEqualTo(1);
    assertThat(r.cache.l3Stats().pagesWritten()).isEqualTo(4);
    assertThat(r.cache.evictHost(4)).isEqualTo(4);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void theBackupThresholdWaitsForHits() {
    FakeKvStore store = new FakeKvStore();
    L3Rank r = rank(store, L3.withBackupThreshold(2));
    int[] t = tokens(8, 2);
    r.serve(1, t);
    L3Rank.sync(r);
    assertThat(r.cache.pendingL3Writes()).isZero();
    r.serve(2, t);
    assertThat(r.cache.pendingL3Writes()).isEqualTo(1);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(store.size()).isEqualTo(2);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aWriteCoversTheAncestorsNotInL3AndASplitKeepsBothHalvesProtected() {
    FakeKvStore store = new FakeKvStore();
    L3Rank r = rank(store, L3);
    int[] t = tokens(16, 3);
    r.serve(1, t);
    L3Rank.sync(r);
    RadixNode node = nodeAt(r.cache, t);
    assertThat(node.pendingL3Write).isNotNull();
    // A prompt that shares the first two pages splits the node while its write is pending.
    int[] other = java.util.Arrays.copyOf(t, 12);
    other[9] = 999;
    r.cache.match(0, other);
    RadixNode top = node.parent;
    assertThat(top.pageCount).isEqualTo(2);
    assertThat(top.hostRef).isEqualTo(1);
    assertThat(top.pendingL3Write).isSameAs(node.pendingL3Write);
    CacheInvariants.check(r.cache);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(top.hostRef).isZero();
    assertThat(node.hostRef).isZero();
    assertThat(top.l3State).isEqualTo(RadixNode.L3_STORED);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aFailedPutIsCountedAndOnlyReleasesTheProtection() {
    FakeKvStore store = new FakeKvStore();
    store.failPuts = true;
    L3Rank r = rank(store, L3);
    int[] t = tokens(8, 4);
    populate(t, r);
    RadixNode node = nodeAt(r.cache, t);
    assertThat(r.cache.l3Stats().writesFailed()).isEqualTo(1);
    assertThat(node.hostRef).isZero();
    assertThat(node.l3State).isEqualTo(RadixNode.L3_NONE);
    assertThat(node.backupState()).isEqualTo(BackupState.COMMITTED);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aHostPageChangedSinceItsBackupNeverReachesTheStore() {
    FakeKvStore store = new FakeKvStore();
    L3Rank r = rank(store, L3);
    int[] t = tokens(8, 5);
    r.serve(1, t);
    L3Rank.sync(r);
    RadixNode node = nodeAt(r.cache, t);
    assertThat(node.l3State).isEqualTo(RadixNode.L3_WRITING);
    // One bit of the host copy flips at rest, after its checksum was taken.
    int slot = node.hostSlots()[0];
    java.lang.foreign.MemorySegment block = r.memory.host.block(slot, 0);
    block.set(
        java.lang.foreign.ValueLayout.JAVA_BYTE,
        3,
        (byte) (block.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 3) ^ 0x10));

    r.executor.runAll();
    L3Rank.sync(r);

    assertThat(store.size()).as("pages the store took").isZero();
    assertThat(r.cache.l3Stats().writesFailed()).isEqualTo(1);
    assertThat(r.cache.hostChecksumMismatches()).isEqualTo(1);
    assertThat(node.l3State).isEqualTo(RadixNode.L3_NONE);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aPutFailedOnOneRankIsFailedOnAll() {
    FakeKvStore good = new FakeKvStore();
    FakeKvStore bad = new FakeKvStore();
    bad.failPuts = true;
    L3Rank a = new L3Rank(0, 2, good, L3, 32, 64);
    L3Rank b = new L3Rank(1, 2, bad, L3, 32, 64);
    populate(tokens(8, 5), a, b);
    assertThat(a.cache.l3Stats().writesFailed()).isEqualTo(1);
    assertThat(b.cache.l3Stats()).isEqualTo(a.cache.l3Stats());
    assertThat(good.size()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- prefetch

  @Test
  void aPrefetchBringsPagesOnlyTheStoreHasBackThroughTheHost() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(32, 6);
    populate(t, rank(store, L3));
    assertThat(store.size()).isEqualTo(8);

    L3Rank r = rank(store, L3);
    assertThat(r.cache.startPrefetch(7, t, RequestOptions.DEFAULT)).isTrue();
    assertThat(r.cache.prefetchState(7)).isEqualTo(RankCache.PrefetchState.RUNNING);
    assertThatThrownBy(() -> r.cache.admit(7, t))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("still PROBING");
    L3Rank.sync(r);
    assertThat(r.cache.hostUsage().protectedPages()).isZero();
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.hostUsage().protectedPages()).isEqualTo(8);
    assertThat(r.cache.prefetchState(7)).isEqualTo(RankCache.PrefetchState.RUNNING);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(7)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(8);
    // The new node keeps the hashes its probe computed (CACHE.md §12): a write below it or an
    // event finds them, and nothing hashes these pages again.
    assertThat(nodeAt(r.cache, t).pageHashes)
        .isDeepEqualTo(PageHasher.chain(null, t, 0, 8, L3Rank.PAGE));

    Admission admission = r.cache.admit(7, t);
    assertThat(admission.hostHitLength()).isEqualTo(32);
    assertThat(admission.loadedLength()).isEqualTo(32);
    assertThat(r.cache.admittedPrefetch(7)).contains(new PrefetchOutcome(7, 0, 32));
    r.memory.engine.completeAll();
    L3Rank.sync(r);
    assertThat(r.pattern.verifyTree(r.cache, r.memory.device, r.memory.host)).isNull();
    r.cache.finish(7);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void ranksAgreeOnTheShortestShardAndInsertTheSamePages() {
    FakeKvStore s0 = new FakeKvStore();
    FakeKvStore s1 = new FakeKvStore();
    int[] t = tokens(32, 7);
    populate(t, new L3Rank(0, 2, s0, L3, 32, 64), new L3Rank(1, 2, s1, L3, 32, 64));
    L3Rank a = new L3Rank(0, 2, s0, L3, 32, 64);
    L3Rank b = new L3Rank(1, 2, s1, L3, 32, 64);
    s1.drop(b.key(t, 5));
    assertThat(a.key(t, 5)).isNotEqualTo(b.key(t, 5));

    assertThat(a.cache.startPrefetch(3, t, RequestOptions.DEFAULT)).isTrue();
    assertThat(b.cache.startPrefetch(3, t, RequestOptions.DEFAULT)).isTrue();
    a.executor.runAll();
    L3Rank.sync(a, b);
    assertThat(a.cache.hostUsage().protectedPages()).isZero();
    b.executor.runAll();
    L3Rank.sync(a, b);
    assertThat(a.cache.l3Stats().pagesReserved()).isEqualTo(5);
    a.executor.runAll();
    b.executor.runAll();
    L3Rank.sync(a, b);
    for (L3Rank r : new L3Rank[] {a, b}) {
      assertThat(r.cache.prefetchState(3)).isEqualTo(RankCache.PrefetchState.DONE);
      assertThat(r.cache.admit(3, t).loadedLength()).isEqualTo(20);
      assertThat(r.cache.admittedPrefetch(3)).contains(new PrefetchOutcome(3, 0, 20));
      r.memory.engine.completeAll();
    }
    L3Rank.sync(a, b);
    for (L3Rank r : new L3Rank[] {a, b}) {
      assertThat(r.pattern.verifyTree(r.cache, r.memory.device, r.memory.host)).isNull();
      r.cache.abort(3);
      CacheInvariants.checkIdle(r.cache);
    }
  }

  @Test
  void aTimeoutOnOneRankDecidesForAllAndTheSlowRanksSlotsDrainLater() {
    L3Config l3 = L3.withTimeouts(Duration.ofMillis(1), Duration.ZERO, Duration.ofMillis(1));
    FakeKvStore s0 = new FakeKvStore();
    FakeKvStore s1 = new FakeKvStore();
    int[] t = tokens(64, 8);
    populate(t, new L3Rank(0, 2, s0, l3, 32, 64), new L3Rank(1, 2, s1, l3, 32, 64));
    L3Rank a = new L3Rank(0, 2, s0, l3, 32, 64);
    L3Rank b = new L3Rank(1, 2, s1, l3, 32, 64);
    a.cache.startPrefetch(4, t, RequestOptions.DEFAULT);
    b.cache.startPrefetch(4, t, RequestOptions.DEFAULT);
    a.executor.runAll();
    b.executor.runAll();
    L3Rank.sync(a, b);
    a.executor.runAll();
    assertThat(b.executor.runStep()).isTrue();
    L3Rank.sync(a, b);
    assertThat(a.cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.RUNNING);

    b.clock.addAndGet(2_000_000);
    L3Rank.sync(a, b);
    assertThat(a.cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(a.cache.l3Stats().prefetchesTimedOut()).isEqualTo(1);
    assertThat(a.cache.l3Stats().pagesInserted()).isEqualTo(L3Progress.FETCH_STEP_PAGES);
    // Rank 1 may still be writing the other 8 slots: both ranks keep them reserved, beside the
    // 8 inserted pages that stay locked for the request until its admission.
    assertThat(a.cache.pendingPrefetches()).isEqualTo(1);
    assertThat(a.cache.hostUsage().protectedPages()).isEqualTo(16);
    for (L3Rank r : new L3Rank[] {a, b}) {
      r.cache.admit(4, t);
      r.cache.abort(4);
    }
    L3Rank.sync(a, b);
    assertThat(b.cache.pendingPrefetches()).isEqualTo(1);
    b.executor.runAll();
    L3Rank.sync(a, b);
    assertThat(a.cache.pendingPrefetches()).isZero();
    a.memory.engine.completeAll();
    b.memory.engine.completeAll();
    L3Rank.sync(a, b);
    CacheInvariants.checkIdle(a.cache);
    CacheInvariants.checkIdle(b.cache);
  }

  @Test
  void waitCompleteIgnoresTheClockAndWaitsForEveryRank() {
    L3Config l3 =
        L3.withPrefetchPolicy(L3PrefetchPolicy.WAIT_COMPLETE)
            .withTimeouts(Duration.ofMillis(1), Duration.ZERO, Duration.ofMillis(1));
    FakeKvStore s0 = new FakeKvStore();
    FakeKvStore s1 = new FakeKvStore();
    int[] t = tokens(64, 9);
    populate(t, new L3Rank(0, 2, s0, l3, 32, 64), new L3Rank(1, 2, s1, l3, 32, 64));
    L3Rank a = new L3Rank(0, 2, s0, l3, 32, 64);
    L3Rank b = new L3Rank(1, 2, s1, l3, 32, 64);
    a.cache.startPrefetch(4, t, RequestOptions.DEFAULT);
    b.cache.startPrefetch(4, t, RequestOptions.DEFAULT);
    a.executor.runAll();
    b.executor.runAll();
    L3Rank.sync(a, b);
    a.executor.runAll();
    b.executor.runStep();
    b.clock.addAndGet(10_000_000);
    L3Rank.sync(a, b);
    assertThat(a.cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.RUNNING);
    b.executor.runAll();
    L3Rank.sync(a, b);
    assertThat(a.cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(b.cache.l3Stats().pagesInserted()).isEqualTo(16);
    assertThat(a.cache.l3Stats().prefetchesTimedOut()).isZero();
    for (L3Rank r : new L3Rank[] {a, b}) {
      r.cache.cancelPrefetch(4);
      CacheInvariants.checkIdle(r.cache);
    }
  }

  @Test
  void bestEffortTakesWhatIsFetchedAtTheFirstAgreement() {
    L3Config l3 = L3.withPrefetchPolicy(L3PrefetchPolicy.BEST_EFFORT);
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(64, 10);
    populate(t, rank(store, l3));
    L3Rank r = rank(store, l3);
    r.cache.startPrefetch(2, t, RequestOptions.DEFAULT);
    r.executor.runAll();
    L3Rank.sync(r);
    r.executor.runStep();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(2)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(8);
    assertThat(r.cache.l3Stats().pagesMissed()).isEqualTo(8);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.pendingPrefetches()).isZero();
    r.cache.cancelPrefetch(2);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void anAbortWhileFetchingFreesTheSlotsOnlyOnceTheFetchStopped() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(32, 11);
    populate(t, rank(store, L3));
    L3Rank r = rank(store, L3);
    r.cache.startPrefetch(9, t, RequestOptions.DEFAULT);
    r.executor.runAll();
    L3Rank.sync(r);
    r.cache.cancelPrefetch(9);
    assertThat(r.cache.prefetchState(9)).isEqualTo(RankCache.PrefetchState.NONE);
    L3Rank.sync(r);
    assertThat(r.cache.hostUsage().protectedPages()).isEqualTo(8);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.hostUsage().protectedPages()).isZero();
    assertThat(r.cache.l3Stats().prefetchesAborted()).isEqualTo(1);
    assertThat(r.cache.nodeCount()).isZero();
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aCorruptPageIsAMissAndNothingAfterItIsTaken() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(32, 12);
    populate(t, rank(store, L3));
    L3Rank r = rank(store, L3);
    store.corrupt.add(r.key(t, 3));
    r.cache.startPrefetch(1, t, RequestOptions.DEFAULT);
    r.executor.runAll();
    L3Rank.sync(r);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(3);
    assertThat(r.cache.l3Stats().pagesMissed()).isEqualTo(5);
    r.cache.admit(1, t);
    r.memory.engine.completeAll();
    L3Rank.sync(r);
    assertThat(r.pattern.verifyTree(r.cache, r.memory.device, r.memory.host)).isNull();
    r.cache.abort(1);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aShortHitIsNotPrefetchedAndAnAgreedHitBelowTheThresholdReservesNothing() {
    L3Config l3 = L3.withPrefetchThreshold(4 * L3Rank.PAGE);
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(32, 13);
    populate(java.util.Arrays.copyOf(t, 12), rank(store, l3));
    L3Rank r = rank(store, l3);
    assertThat(r.cache.startPrefetch(1, java.util.Arrays.copyOf(t, 12), RequestOptions.DEFAULT))
        .isFalse();
    assertThat(r.cache.startPrefetch(2, t, RequestOptions.DEFAULT)).isTrue();
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(2)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().prefetchesSkipped()).isEqualTo(1);
    assertThat(r.cache.l3Stats().pagesReserved()).isZero();
    assertThat(r.cache.admit(2, t).hostHitLength()).isZero();
    assertThat(r.cache.admittedPrefetch(2)).contains(new PrefetchOutcome(2, 0, 0));
    r.cache.abort(2);
    CacheInvariants.checkIdle(r.cache);
  }

  /**
   * A host tier that holds only copies of pages still on the device (no larger than the device
   * pool under write-through) has no leaf a prefetch may evict: the prefetch takes what is free,
   * and the pages it found in the store and could not take are counted, never silent.
   */
  @Test
  void pagesTheHostHasNoRoomForAreCountedAndAPrefetchTakesWhatIsFree() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(32, 17);
    populate(t, rank(store, L3));
    // 12 host slots; the 8 pages of another prompt stay on the device with their host copies.
    L3Rank r = new L3Rank(0, 1, store, L3, 32, 12);
    r.serve(1, tokens(32, 18));
    L3Rank.sync(r);
    assertThat(r.cache.hostUsage().free()).isEqualTo(4);

    assertThat(r.cache.startPrefetch(2, t, RequestOptions.DEFAULT)).isTrue();
    r.executor.runAll();
    L3Rank.sync(r);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(2)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().pagesReserved()).isEqualTo(4);
    assertThat(r.cache.l3Stats().pagesNoHostRoom()).isEqualTo(4);
    assertThat(r.cache.admit(2, t).hostHitLength()).isEqualTo(4 * L3Rank.PAGE);
    r.memory.engine.completeAll();
    L3Rank.sync(r);
    r.cache.abort(2);
    L3Rank.sync(r);

    // Now every host slot is a device page's copy: nothing to take, the prefetch is skipped.
    int[] other = tokens(32, 19);
    populate(other, rank(store, L3));
    assertThat(r.cache.hostUsage().free()).isZero();
    assertThat(r.cache.startPrefetch(3, other, RequestOptions.DEFAULT)).isTrue();
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(3)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().prefetchesSkipped()).isEqualTo(1);
    assertThat(r.cache.l3Stats().pagesNoHostRoom()).isEqualTo(4 + 8);
    assertThat(r.cache.admit(3, other).hostHitLength()).isZero();
    r.cache.abort(3);
    CacheInvariants.check(r.cache);
  }

  @Test
  void pagesTheTreeHasAlreadyAreDuplicatesAndTheRestExtendsTheHostHit() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(32, 14);
    populate(t, rank(store, L3));
    L3Rank r = rank(store, L3);
    r.cache.startPrefetch(5, t, RequestOptions.DEFAULT);
    r.executor.runAll();
    L3Rank.sync(r);
    // Meanwhile a request computes and backs up the first three pages.
    r.serve(6, java.util.Arrays.copyOf(t, 12));
    L3Rank.sync(r);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(5)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().pagesDuplicate()).isEqualTo(3);
    assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(5);
    // The new leaf holds pages 3 to 7 of the candidates, and their hashes.
    RadixNode leaf = nodeAt(r.cache, t);
    assertThat(leaf.pageCount).isEqualTo(5);
    assertThat(leaf.pageHashes)
        .isDeepEqualTo(
            java.util.Arrays.copyOfRange(PageHasher.chain(null, t, 0, 8, L3Rank.PAGE), 3, 8));
    Admission admission = r.cache.admit(5, t);
    assertThat(admission.devicePrefixLength()).isEqualTo(32);
    assertThat(r.cache.admittedPrefetch(5).orElseThrow().overlap(12, 32)).isEqualTo(20);
    r.memory.engine.completeAll();
    r.executor.runAll();
    L3Rank.sync(r);
    r.cache.abort(5);
    r.executor.runAll();
    L3Rank.sync(r);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void keysDependOnModelRankAndWorldSizeUnlessTheKvIsReplicated() {
    byte[] hash = new byte[32];
    assertThat(L3Keys.key(L3Keys.salt("m", 0, 2, false), hash))
        .isNotEqualTo(L3Keys.key(L3Keys.salt("m", 1, 2, false), hash))
        .isNotEqualTo(L3Keys.key(L3Keys.salt("m", 0, 4, false), hash))
        .isNotEqualTo(L3Keys.key(L3Keys.salt("n", 0, 2, false), hash));
    assertThat(L3Keys.key(L3Keys.salt("m", 0, 2, true), hash))
        .isEqualTo(L3Keys.key(L3Keys.salt("m", 1, 2, true), hash));
    assertThatThrownBy(() -> L3Keys.salt("m", 2, 2, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank=2");
  }

  @Test
  void withReplicatedKvOnlyRankZeroWrites() {
    L3Config l3 = L3.withReplicatedKv(true);
    FakeKvStore shared = new FakeKvStore();
    L3Rank a = new L3Rank(0, 2, shared, l3, 32, 64);
    L3Rank b = new L3Rank(1, 2, shared, l3, 32, 64);
    populate(tokens(8, 15), a, b);
    assertThat(shared.puts).isEqualTo(2);
    assertThat(a.cache.l3Stats().writesCommitted()).isEqualTo(1);
    assertThat(Optional.of(b.cache.l3Stats())).contains(a.cache.l3Stats());
  }
}
