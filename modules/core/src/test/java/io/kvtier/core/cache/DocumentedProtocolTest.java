package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.L3Config;
import io.kvtier.spi.TransferFailedException;
import java.util.Arrays;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The sequences the cache's Javadoc describes for several ranks, driven on 2 and 4 ranks with a copy
 * that fails on one of them: the package description's per-tick sync ({@link L3Rank#sync} does
 * exactly what it says, and checks the digests and invariants after every commit), {@link
 * Admission#pendingLoads()}'s rule for a failed load, and the prepared backup's prepare, stream
 * and insert. The digests stay equal throughout.
 */
class DocumentedProtocolTest {
  private static final L3Config L3 = L3Config.DEFAULTS.withPrefetchThreshold(L3Rank.PAGE);

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private static int[] tokens(int length, int salt) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = 1 + (i * 7 + salt * 131) % 1000;
    }
    return t;
  }

  private static L3Rank[] ranks(int n) {
    L3Rank[] ranks = new L3Rank[n];
    for (int r = 0; r < n; r++) {
      ranks[r] = new L3Rank(r, n, new FakeKvStore(), L3, 32, 64);
    }
    return ranks;
  }

  private static void compute(L3Rank r, long id, int[] tokens) {
    r.cache.allocateTokens(id, tokens.length);
    RequestState s = r.cache.rooms().requests().get(id);
    long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
    for (int i = 0; i < s.ownCount(); i++) {
      r.pattern.write(r.memory.device, s.own.slot(i), hashes, s.prefixLength / L3Rank.PAGE + i);
    }
  }

  private static void assertEqualReplicas(L3Rank... ranks) {
    for (int r = 1; r < ranks.length; r++) {
      assertThat(ranks[r].cache.replicaDigest()).isEqualTo(ranks[0].cache.replicaDigest());
      assertThat(ranks[r].cache.stats()).isEqualTo(ranks[0].cache.stats());
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
      assertThat(r.pattern.verifyTree(r.cache, r.memory.device, r.memory.host)).isNull();
    }
    assertEqualReplicas(ranks);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void theSyncOfThePackageDescriptionCommitsABackupThatFailedOnOneRankAsFailedOnBoth(int n) {
    L3Rank[] ranks = ranks(n);
    int[] t = tokens(8, 1);
    for (L3Rank r : ranks) {
      r.cache.admit(1, t);
      compute(r, 1, t);
      r.cache.finish(1);
      r.memory.engine.completeWrite(r.rank == 1);
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      assertThat(r.cache.stats().backupsFailed()).isEqualTo(1);
      assertThat(r.cache.match(0, t).lastDeviceNode().backupState()).isEqualTo(BackupState.NONE);
      assertThat(r.cache.pendingL3Writes()).as("nothing failed reaches L3").isZero();
    }
    assertEqualReplicas(ranks);
    drain(ranks);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aLoadThatFailedOnOneRankAbortsTheRequestOnBothOnlyOnceTheAgreedCommitSaysSo(int n)
      throws InterruptedException {
    L3Rank[] ranks = ranks(n);
    int[] prefix = tokens(8, 2);
    for (L3Rank r : ranks) {
      r.serve(1, prefix);
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      r.executor.runAll();
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      r.cache.evictDevice(2);
    }
    int[] t = Arrays.copyOf(prefix, 12);
    LoadBack[] loads = new LoadBack[n];
    for (L3Rank r : ranks) {
      Admission a = r.cache.admit(2, t);
      assertThat(a.pendingLoads()).hasSize(1);
      loads[r.rank] = a.pendingLoads().getFirst();
      while (r.memory.engine.pendingLoads() > 0) {
        r.memory.engine.completeLoad(r.rank == 0);
      }
    }
    // Rank-local waits: rank 0's copy failed there, rank 1's did not. Neither decides yet.
    assertThatThrownBy(() -> ranks[0].cache.awaitLoadLayer(loads[0], 0))
        .isInstanceOf(TransferFailedException.class);
    ranks[1].cache.awaitLoadLayer(loads[1], 0);
    assertThat(loads[0].isCommitted()).isFalse();
    assertEqualReplicas(ranks);

    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      assertThat(loads[r.rank].isCommitted()).isTrue();
      assertThat(loads[r.rank].failed()).as("rank %d: the agreed commit", r.rank).isTrue();
      assertThatThrownBy(() -> r.cache.awaitLoadLayer(loads[r.rank], 1))
          .isInstanceOf(TransferFailedException.class)
          .hasMessageContaining("committed as failed");
      r.cache.abort(2);
    }
    assertEqualReplicas(ranks);
    drain(ranks);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aPreparedBackupWhoseStreamedCopyFailedOnOneRankIsRolledBackOnBoth(int n) {
    L3Rank[] ranks = ranks(n);
    int[] t = tokens(8, 3);
    for (L3Rank r : ranks) {
      r.cache.admit(1, t);
      compute(r, 1, t);
      assertThat(r.cache.prepareBackup(1)).isTrue();
      r.cache.streamLayer(1, 0);
      r.cache.streamLayer(1, 1);
      r.memory.engine.completeWrite(r.rank == 1);
      r.cache.finish(1);
      assertThat(r.cache.stats().preparedAttached()).isEqualTo(1);
    }
    assertEqualReplicas(ranks);
    for (L3Rank r : ranks) {
      r.memory.engine.completeAll();
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      assertThat(r.cache.stats().backupsFailed()).isEqualTo(1);
      assertThat(r.cache.match(0, t).lastDeviceNode().backupState()).isEqualTo(BackupState.NONE);
    }
    drain(ranks);
  }
}
