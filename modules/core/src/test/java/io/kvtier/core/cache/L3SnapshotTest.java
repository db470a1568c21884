package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.L3Config;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Recurrent-state snapshots in the L3 tier (HYBRID.md §6) on hand-written fakes: a node's host
 * snapshot is put with its pages and marked at the same agreed commit; a prefetch finds the
 * deepest end whose snapshot every rank's shard has, fetches the pages up to it and the snapshot,
 * and inserts a host-only node that admission resumes from. Every multi-rank step goes through
 * {@link L3Rank#sync}, which checks the invariants (I7's L3 part among them) and that the replica
 * digests stay equal. The stand-in state of a snapshot is a pattern of its prefix ({@link
 * L3Rank#writeState}), so a snapshot that arrives on the wrong node or from the wrong key fails.
 */
class L3SnapshotTest {
  private static final L3Config L3 = L3Config.DEFAULTS.withPrefetchThreshold(L3Rank.PAGE);

  /** One slot per snapshot, an interval snapshot every 2 pages (8 tokens). */
  private static final int SLOTS = 1;

  private static final int INTERVAL = 2;

  private static int[] tokens(int length, int salt) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = 1 + (i * 7 + salt * 131) % 1000;
    }
    return t;
  }

  private static L3Rank rank(int rank, int world, FakeKvStore store) {
    return new L3Rank(rank, world, store, L3, 48, 64, SLOTS, INTERVAL);
  }

  private static L3Rank[] ranks(FakeKvStore... stores) {
    L3Rank[] out = new L3Rank[stores.length];
    for (int r = 0; r < stores.length; r++) {
      out[r] = rank(r, stores.length, stores[r]);
    }
    return out;
  }

  private static FakeKvStore[] stores(int n) {
    FakeKvStore[] out = new FakeKvStore[n];
    for (int i = 0; i < n; i++) {
      out[i] = new FakeKvStore();
    }
    return out;
  }

  /** Serves {@code tokens} with snapshots on each rank, commits the backups and L3 writes. */
  private static void populate(int[] tokens, L3Rank... ranks) {
    for (L3Rank r : ranks) {
      r.serveWithSnapshots(1, tokens);
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      r.executor.runAll();
    }
    L3Rank.sync(ranks);
  }

  /** Runs every rank's store work and one sync, {@code rounds} times. */
  private static void step(int rounds, L3Rank... ranks) {
    for (int i = 0; i < rounds; i++) {
      for (L3Rank r : ranks) {
        r.executor.runAll();
      }
      L3Rank.sync(ranks);
    }
  }

  private static RadixNode nodeEndingAt(RankCache cache, int[] tokens, int end) {
    return cache.match(0, Arrays.copyOf(tokens, end)).lastHostNode();
  }

  // ---------------------------------------------------------------- write

  @Test
  void aNodesHostSnapshotIsPutWithItsPagesAndMarkedAtTheSameCommit() {
    FakeKvStore store = new FakeKvStore();
    L3Rank r = rank(0, 1, store);
    int[] t = tokens(24, 1);
    r.serveWithSnapshots(1, t);
    L3Rank.sync(r);
    // Interval snapshots at 8, 16 and 24: three nodes, each backed up with its snapshot and now
    // in one L3 write that puts the snapshots too.
    RadixNode leaf = nodeEndingAt(r.cache, t, 24);
    assertThat(leaf.depth).isEqualTo(24);
    for (int end : new int[] {8, 16, 24}) {
      RadixNode n = nodeEndingAt(r.cache, t, end);
      assertThat(n.depth).isEqualTo(end);
      assertThat(n.pendingL3Write).isNotNull();
      assertThat(n.pendingL3Write.putsSnapshotOf(n)).as("end %d", end).isTrue();
      assertThat(n.l3Snapshot).isZero();
    }
    r.executor.runAll();
    assertThat(store.size()).isEqualTo(6 + 3);
    for (int page : new int[] {1, 3, 5}) {
      assertThat(store.contains(r.snapshotKey(t, page, 0))).as("page %d", page).isTrue();
    }
    assertThat(store.contains(r.snapshotKey(t, 4, 0))).isFalse();
    assertThat(leaf.l3Snapshot).as("not before the agreed commit").isZero();
    L3Rank.sync(r);
    for (int end : new int[] {8, 16, 24}) {
      RadixNode n = nodeEndingAt(r.cache, t, end);
      assertThat(n.depth).isEqualTo(end);
      assertThat(n.l3State).isEqualTo(RadixNode.L3_STORED);
      assertThat(n.l3Snapshot).as("end %d", end).isEqualTo((byte) 1);
    }
    assertThat(r.cache.l3Stats().snapshotsWritten()).isEqualTo(3);
    assertThat(r.cache.l3Stats().pagesWritten()).isEqualTo(6);
    // The stored bytes are the host snapshot's, which are the state the step wrote.
    long[] hashes = KvPattern.prefixHashes(0, t, t.length);
    byte[][] stored = store.page(r.snapshotKey(t, 5, 0));
    assertThat(r.holdsState(r.memory.host, leaf.hostStateSlots[0], hashes, 24, 0)).isTrue();
    for (int layer = 0; layer < stored.length; layer++) {
      assertThat(stored[layer])
          .isEqualTo(
              r.memory
                  .host
                  .block(leaf.hostStateSlots[0], layer)
                  .toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
    }
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aSplitLeavesTheL3SnapshotBitWithTheLowerHalf() {
    FakeKvStore store = new FakeKvStore();
    L3Rank r = rank(0, 1, store);
    int[] t = tokens(16, 2);
    populate(t, r);
    RadixNode node = nodeEndingAt(r.cache, t, 16);
    assertThat(node.l3Snapshot).isEqualTo((byte) 1);
    // A prompt sharing 12 tokens splits the node [8, 16) at 12: the top half's end has no
    // snapshot in any tier, so L3 holds none for it either.
    int[] other = Arrays.copyOf(t, 16);
    other[13] = 999;
    r.cache.match(0, other);
    RadixNode top = node.parent;
    assertThat(top.depth).isEqualTo(12);
    assertThat(top.l3State).isEqualTo(RadixNode.L3_STORED);
    assertThat(top.l3Snapshot).isZero();
    assertThat(node.l3Snapshot).isEqualTo((byte) 1);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aSnapshotPutFailedOnOneRankLeavesNoRankMarked() {
    FakeKvStore[] stores = stores(2);
    L3Rank[] group = ranks(stores);
    int[] t = tokens(24, 3);
    stores[1].failPutKeys.add(group[1].snapshotKey(t, 5, 0));
    populate(t, group);
    // Each node's backup commits on its own, so each is written on its own: the write of the
    // node ending at 24 failed on rank 1, so on every rank neither its pages nor its snapshot
    // count as stored; the two before it are.
    for (L3Rank r : group) {
      assertThat(r.cache.l3Stats().writesFailed()).isEqualTo(1);
      assertThat(r.cache.l3Stats().snapshotsWritten()).isEqualTo(2);
      RadixNode n = nodeEndingAt(r.cache, t, 24);
      assertThat(n.l3State).isEqualTo(RadixNode.L3_NONE);
      assertThat(n.l3Snapshot).isZero();
      assertThat(nodeEndingAt(r.cache, t, 16).l3Snapshot).isEqualTo((byte) 1);
    }
    assertThat(stores[0].contains(group[0].snapshotKey(t, 5, 0))).isTrue();
    // Rank 0's store has the whole chain, rank 1's all but the last snapshot: a later prefetch
    // resumes at the deepest end both have.
    L3Rank[] fresh = ranks(stores);
    int[] prompt = tokens(32, 3);
    for (L3Rank r : fresh) {
      assertThat(r.cache.startPrefetch(5, prompt, RequestOptions.DEFAULT)).isTrue();
    }
    step(3, fresh);
    for (L3Rank r : fresh) {
      assertThat(r.cache.prefetchState(5)).isEqualTo(RankCache.PrefetchState.DONE);
      Admission a = r.cache.admit(5, prompt);
      assertThat(a.usableLength()).isEqualTo(16);
      r.memory.engine.completeAll();
    }
    L3Rank.sync(fresh);
    for (L3Rank r : fresh) {
      r.cache.abort(5);
      CacheInvariants.checkIdle(r.cache);
    }
  }

  // ---------------------------------------------------------------- prefetch

  @Test
  void aPrefetchBringsTheDeepestSnapshotBackAndAdmissionResumesFromIt() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(24, 4);
    populate(t, rank(0, 1, store));
    L3Rank r = rank(0, 1, store);
    int[] prompt = tokens(32, 4);
    assertThat(r.cache.startPrefetch(7, prompt, RequestOptions.DEFAULT)).isTrue();
    r.executor.runAll();
    L3Rank.sync(r);
    // One rank: its deepest end is every rank's, agreed in one round; 6 pages and 1 snapshot.
    assertThat(r.cache.hostUsage().protectedPages()).isEqualTo(7);
    r.executor.runAll();
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(7)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(6);
    assertThat(r.cache.l3Stats().snapshotsInserted()).isEqualTo(1);
    RadixNode node = nodeEndingAt(r.cache, prompt, 24);
    assertThat(node.depth).isEqualTo(24);
    assertThat(node.resident()).isFalse();
    assertThat(node.hostStateSlots).hasSize(SLOTS);
    assertThat(node.l3Snapshot).isEqualTo((byte) 1);
    long[] hashes = KvPattern.prefixHashes(0, prompt, prompt.length);
    assertThat(r.holdsState(r.memory.host, node.hostStateSlots[0], hashes, 24, 0)).isTrue();

    Admission admission = r.cache.admit(7, prompt);
    assertThat(admission.usableLength()).isEqualTo(24);
    assertThat(admission.loadedLength()).isEqualTo(24);
    r.memory.engine.completeAll();
    L3Rank.sync(r);
    int[] resume = r.cache.resumeSlots(7);
    assertThat(resume).hasSize(SLOTS);
    assertThat(r.holdsState(r.memory.device, resume[0], hashes, 24, 0)).isTrue();
    assertThat(r.pattern.verifyTree(r.cache, r.memory.device, r.memory.host)).isNull();
    r.cache.abort(7);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void withoutTheDeepestSnapshotTheNextOneDownIsTheEndAndPagesPastItStayInTheStore() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(24, 5);
    L3Rank writer = rank(0, 1, store);
    populate(t, writer);
    store.drop(writer.snapshotKey(t, 5, 0));
    L3Rank r = rank(0, 1, store);
    int[] prompt = tokens(32, 5);
    r.cache.startPrefetch(2, prompt, RequestOptions.DEFAULT);
    step(2, r);
    assertThat(r.cache.l3Stats().pagesReserved()).isEqualTo(4);
    assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(4);
    Admission admission = r.cache.admit(2, prompt);
    assertThat(admission.usableLength()).isEqualTo(16);
    r.memory.engine.completeAll();
    L3Rank.sync(r);
    r.cache.abort(2);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void fourRanksWithEverySnapshotAgreeInOneRound() {
    FakeKvStore[] stores = stores(4);
    int[] t = tokens(24, 6);
    populate(t, ranks(stores));
    L3Rank[] group = ranks(stores);
    int[] prompt = tokens(32, 6);
    for (L3Rank r : group) {
      r.cache.startPrefetch(3, prompt, RequestOptions.DEFAULT);
    }
    step(1, group);
    assertThat(group[0].cache.l3Stats().pagesReserved()).isEqualTo(6);
    step(1, group);
    long[] hashes = KvPattern.prefixHashes(0, prompt, prompt.length);
    for (L3Rank r : group) {
      assertThat(r.cache.prefetchState(3)).isEqualTo(RankCache.PrefetchState.DONE);
      RadixNode node = nodeEndingAt(r.cache, prompt, 24);
      assertThat(r.holdsState(r.memory.host, node.hostStateSlots[0], hashes, 24, 0)).isTrue();
      assertThat(r.cache.admit(3, prompt).usableLength()).isEqualTo(24);
      r.memory.engine.completeAll();
    }
    L3Rank.sync(group);
    for (L3Rank r : group) {
      r.cache.abort(3);
      CacheInvariants.checkIdle(r.cache);
    }
  }

  /**
   * Rank 1's shard lost the snapshot at 16, rank 2's the one at 24. The MIN of the ranks'
   * deepest ends (16) is no snapshot of rank 1's: the ranks probe again below it until they
   * name one end (8), the deepest every shard has, and no rank resumes from a missing state.
   */
  @Test
  void fourRanksWhoseShardsLackDifferentSnapshotsAgreeOnOneEveryRankHas() {
    FakeKvStore[] stores = stores(4);
    int[] t = tokens(24, 7);
    L3Rank[] writers = ranks(stores);
    populate(t, writers);
    stores[1].drop(writers[1].snapshotKey(t, 3, 0));
    stores[2].drop(writers[2].snapshotKey(t, 5, 0));
    L3Rank[] group = ranks(stores);
    int[] prompt = tokens(32, 7);
    for (L3Rank r : group) {
      r.cache.startPrefetch(4, prompt, RequestOptions.DEFAULT);
    }
    step(1, group);
    assertThat(group[0].cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.RUNNING);
    assertThat(group[0].cache.l3Stats().pagesReserved()).as("ends 24, 24, 16, 24").isZero();
    step(1, group);
    assertThat(group[0].cache.l3Stats().pagesReserved()).as("ends 16, 8, 16, 16").isZero();
    step(1, group);
    assertThat(group[0].cache.l3Stats().pagesReserved()).as("all name 8").isEqualTo(2);
    step(1, group);
    long[] hashes = KvPattern.prefixHashes(0, prompt, prompt.length);
    for (L3Rank r : group) {
      assertThat(r.cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.DONE);
      RadixNode node = nodeEndingAt(r.cache, prompt, 8);
      assertThat(node.depth).isEqualTo(8);
      assertThat(r.holdsState(r.memory.host, node.hostStateSlots[0], hashes, 8, 0)).isTrue();
      assertThat(r.cache.admit(4, prompt).usableLength()).isEqualTo(8);
      r.memory.engine.completeAll();
    }
    L3Rank.sync(group);
    for (L3Rank r : group) {
      r.cache.abort(4);
      CacheInvariants.checkIdle(r.cache);
    }
  }

  @Test
  void aSnapshotGetFailedOnOneRankIsTakenByNoRank() {
    FakeKvStore[] stores = stores(2);
    int[] t = tokens(24, 8);
    L3Rank[] writers = ranks(stores);
    populate(t, writers);
    // The probe sees the key; the read of it fails on rank 1 only.
    stores[1].corrupt.add(writers[1].snapshotKey(t, 5, 0));
    L3Rank[] group = ranks(stores);
    int[] prompt = tokens(32, 8);
    for (L3Rank r : group) {
      r.cache.startPrefetch(6, prompt, RequestOptions.DEFAULT);
    }
    step(2, group);
    for (L3Rank r : group) {
      assertThat(r.cache.prefetchState(6)).isEqualTo(RankCache.PrefetchState.DONE);
      assertThat(r.cache.l3Stats().snapshotsInserted()).isZero();
      // The pages every rank fetched are in the tree; with no snapshot at their end they are
      // matched but no resume point, and the snapshot's slots are free again.
      assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(6);
      RadixNode node = nodeEndingAt(r.cache, prompt, 24);
      assertThat(node.hostStateSlots).isNull();
      Admission a = r.cache.admit(6, prompt);
      assertThat(a.usableLength()).isZero();
      assertThat(r.cache.resumeSlots(6)).isEmpty();
    }
    for (L3Rank r : group) {
      r.cache.abort(6);
      CacheInvariants.checkIdle(r.cache);
    }
  }

  @Test
  void withSnapshotsAStoreWithPagesButNoSnapshotIsNotFetched() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(24, 9);
    // Written by a cache without snapshots: pages only.
    L3Rank plain = new L3Rank(0, 1, store, L3, 48, 64);
    plain.serve(1, t);
    L3Rank.sync(plain);
    plain.executor.runAll();
    L3Rank.sync(plain);
    assertThat(store.size()).isEqualTo(6);
    L3Rank r = rank(0, 1, store);
    r.cache.startPrefetch(8, tokens(32, 9), RequestOptions.DEFAULT);
    step(1, r);
    assertThat(r.cache.prefetchState(8)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().prefetchesSkipped()).isEqualTo(1);
    assertThat(r.cache.l3Stats().pagesReserved()).isZero();
    r.cache.cancelPrefetch(8);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void pagesAndSnapshotAreReservedAllOrNothing() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(24, 10);
    populate(t, rank(0, 1, store));
    // A host pool of 6 pages takes the 6 pages but not the snapshot after them: without it the
    // pages are no resume point, so nothing is reserved (pages alone would take 6).
    L3Rank r = new L3Rank(0, 1, store, L3, 48, 6, SLOTS, INTERVAL);
    r.cache.startPrefetch(1, tokens(32, 10), RequestOptions.DEFAULT);
    step(1, r);
    assertThat(r.cache.prefetchState(1)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().prefetchesSkipped()).isEqualTo(1);
    assertThat(r.cache.l3Stats().pagesReserved()).isZero();
    assertThat(r.cache.l3Stats().pagesNoHostRoom()).isEqualTo(6);
    r.cache.cancelPrefetch(1);
    CacheInvariants.checkIdle(r.cache);
  }

  @Test
  void aSnapshotTheTreeGotMeanwhileIsADuplicateAndItsSlotsGoBack() {
    FakeKvStore store = new FakeKvStore();
    int[] t = tokens(24, 11);
    populate(t, rank(0, 1, store));
    L3Rank r = rank(0, 1, store);
    int[] prompt = tokens(32, 11);
    r.cache.startPrefetch(5, prompt, RequestOptions.DEFAULT);
    step(1, r);
    // While the fetch runs, a request computes the same 24 tokens with their snapshots.
    r.serveWithSnapshots(6, t);
    L3Rank.sync(r);
    step(2, r);
    assertThat(r.cache.prefetchState(5)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(r.cache.l3Stats().pagesDuplicate()).isEqualTo(6);
    assertThat(r.cache.l3Stats().snapshotsInserted()).isZero();
    RadixNode node = nodeEndingAt(r.cache, prompt, 24);
    assertThat(node.resident()).isTrue();
    Admission admission = r.cache.admit(5, prompt);
    assertThat(admission.usableLength()).isEqualTo(24);
    r.memory.engine.completeAll();
    step(1, r);
    r.cache.abort(5);
    step(1, r);
    CacheInvariants.checkIdle(r.cache);
  }

  /**
   * A timeout decides while the slow rank may still be writing: the pages both have are taken,
   * the snapshot (which the slow rank has not read) is taken by none, and its slots stay
   * reserved with the rest until the slow rank's fetch has stopped.
   */
  @Test
  void aTimeoutBeforeTheSnapshotIsInKeepsItsSlotsUntilTheSlowRanksFetchStopped() {
    L3Config l3 = L3.withTimeouts(Duration.ofMillis(1), Duration.ZERO, Duration.ofMillis(1));
    FakeKvStore[] stores = stores(2);
    int[] t = tokens(64, 12);
    L3Rank[] writers = new L3Rank[2];
    for (int i = 0; i < 2; i++) {
      writers[i] = new L3Rank(i, 2, stores[i], l3, 96, 128, SLOTS, INTERVAL);
    }
    populate(t, writers);
    L3Rank a = new L3Rank(0, 2, stores[0], l3, 96, 128, SLOTS, INTERVAL);
    L3Rank b = new L3Rank(1, 2, stores[1], l3, 96, 128, SLOTS, INTERVAL);
    int[] prompt = tokens(72, 12);
    a.cache.startPrefetch(4, prompt, RequestOptions.DEFAULT);
    b.cache.startPrefetch(4, prompt, RequestOptions.DEFAULT);
    a.executor.runAll();
    b.executor.runAll();
    L3Rank.sync(a, b);
    assertThat(a.cache.l3Stats().pagesReserved()).isEqualTo(16);
    a.executor.runAll();
    assertThat(b.executor.runStep()).isTrue();
    b.clock.addAndGet(2_000_000);
    L3Rank.sync(a, b);
    for (L3Rank r : new L3Rank[] {a, b}) {
      assertThat(r.cache.prefetchState(4)).isEqualTo(RankCache.PrefetchState.DONE);
      assertThat(r.cache.l3Stats().pagesInserted()).isEqualTo(L3Progress.FETCH_STEP_PAGES);
      assertThat(r.cache.l3Stats().snapshotsInserted()).isZero();
      // 8 inserted pages locked for the request, 8 pages and the snapshot's slot held.
      assertThat(r.cache.hostUsage().protectedPages()).isEqualTo(8 + 8 + SLOTS);
      assertThat(r.cache.admit(4, prompt).usableLength()).isEqualTo(0);
      r.cache.abort(4);
    }
    L3Rank.sync(a, b);
    assertThat(a.cache.pendingPrefetches()).isEqualTo(1);
    b.executor.runAll();
    L3Rank.sync(a, b);
    for (L3Rank r : new L3Rank[] {a, b}) {
      assertThat(r.cache.pendingPrefetches()).isZero();
      r.memory.engine.completeAll();
    }
    L3Rank.sync(a, b);
    CacheInvariants.checkIdle(a.cache);
    CacheInvariants.checkIdle(b.cache);
  }

  @Test
  void withReplicatedStateOnlyRankZeroPutsTheSnapshotsAndEveryRankFindsThem() {
    L3Config l3 = L3.withReplicatedKv(true);
    FakeKvStore shared = new FakeKvStore();
    L3Rank[] writers = new L3Rank[2];
    for (int i = 0; i < 2; i++) {
      writers[i] = new L3Rank(i, 2, shared, l3, 48, 64, SLOTS, INTERVAL);
    }
    int[] t = tokens(24, 13);
    populate(t, writers);
    assertThat(shared.puts).isEqualTo(6 + 3);
    assertThat(writers[1].snapshotKey(t, 5, 0)).isEqualTo(writers[0].snapshotKey(t, 5, 0));
    L3Rank[] group = new L3Rank[2];
    for (int i = 0; i < 2; i++) {
      group[i] = new L3Rank(i, 2, shared, l3, 48, 64, SLOTS, INTERVAL);
    }
    int[] prompt = tokens(32, 13);
    for (L3Rank r : group) {
      r.cache.startPrefetch(2, prompt, RequestOptions.DEFAULT);
    }
    step(2, group);
    for (L3Rank r : group) {
      assertThat(r.cache.l3Stats().snapshotsInserted()).isEqualTo(1);
      assertThat(r.cache.admit(2, prompt).usableLength()).isEqualTo(24);
      r.memory.engine.completeAll();
    }
    L3Rank.sync(group);
    for (L3Rank r : group) {
      r.cache.abort(2);
      CacheInvariants.checkIdle(r.cache);
    }
  }
}
