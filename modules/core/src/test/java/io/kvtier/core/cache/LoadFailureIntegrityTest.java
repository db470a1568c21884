package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.L3Config;
import java.util.Arrays;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * CACHE.md §10 and §12 together: KV computed on top of a load-back that fails on one rank is
 * untrusted, so it must never become a committed host backup nor reach the L3 store, whatever the
 * order in which its backup and the failed load commit. On 2 and 4 ranks, one of which fails the
 * parent's load; every sync goes through {@link L3Rank#sync}, which checks the invariants and
 * that the replica digests stay equal.
 */
class LoadFailureIntegrityTest {
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

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static L3Rank[] ranks(int n) {
    L3Rank[] ranks = new L3Rank[n];
    for (int r = 0; r < n; r++) {
      ranks[r] = new L3Rank(r, n, new FakeKvStore(), L3, 32, 64);
    }
    return ranks;
  }

  /** Serves {@code prefix} everywhere, commits its host and L3 copies, evicts it to the host. */
  private static void cacheOnHostOnly(int[] prefix, L3Rank... ranks) {
    for (L3Rank r : ranks) {
      r.serve(1, prefix);
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      r.executor.runAll();
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      assertThat(r.cache.evictDevice(prefix.length / L3Rank.PAGE)).isPositive();
      assertThat(r.cache.match(0, prefix).deviceLength()).isZero();
    }
  }

  /** Admits {@code tokens} (its prefix loads back), computes and finishes it; returns its node. */
  private static RadixNode[] computeOnTheLoad(long id, int[] tokens, L3Rank... ranks) {
    RadixNode[] nodes = new RadixNode[ranks.length];
    for (L3Rank r : ranks) {
      Admission a = r.cache.admit(id, tokens);
      assertThat(a.pendingLoads()).as("the prefix is loaded back").hasSize(1);
      r.cache.allocateTokens(id, tokens.length);
      RequestState s = r.cache.rooms().requests().get(id);
      long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
      for (int i = 0; i < s.ownCount(); i++) {
        r.pattern.write(r.memory.device, s.own.slot(i), hashes, s.prefixLength / L3Rank.PAGE + i);
      }
      r.cache.finish(id);
      nodes[r.rank] = r.cache.match(0, tokens).lastDeviceNode();
      assertThat(nodes[r.rank].backupState())
          .as("write-through backs the computed node up at its insert")
          .isEqualTo(BackupState.PENDING);
    }
    return nodes;
  }

  private static void completeLoads(L3Rank r, boolean fail) {
    while (r.memory.engine.pendingLoads() > 0) {
      r.memory.engine.completeLoad(fail);
    }
  }

  private static void completeWrites(L3Rank r) {
    while (r.memory.engine.pendingWrites() > 0) {
      r.memory.engine.completeWrite(false);
    }
  }

  /** Nothing of the computed pages is a committed host copy, queued for L3 or in any store. */
  private static void assertNeverCommitted(int[] tokens, RadixNode[] computed, L3Rank... ranks) {
    for (L3Rank r : ranks) {
      r.executor.runAll();
    }
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      RadixNode node = computed[r.rank];
      assertThat(node.backupState())
          .as("rank %d: backup of KV computed on a failed load", r.rank)
          .isNotEqualTo(BackupState.COMMITTED);
      assertThat(node.l3State)
          .as("rank %d: L3 state of KV computed on a failed load", r.rank)
          .isEqualTo(RadixNode.L3_NONE);
      for (int page = 2; page < tokens.length / L3Rank.PAGE; page++) {
        assertThat(r.store.contains(r.key(tokens, page)))
            .as("rank %d: page %d, computed on a failed load, is in the L3 store", r.rank, page)
            .isFalse();
      }
      assertThat(r.cache.stats().loadsFailed()).isEqualTo(1);
    }
  }

  /**
   * The child's backup and the parent's failed load are ready in the same sync: committing the
   * writes first would make the child {@code COMMITTED} and queue its L3 put before the load's
   * failure marks it untrusted.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aBackupReadyWithItsAncestorsFailedLoadIsNeverCommittedNorWrittenToL3(int n) {
    L3Rank[] ranks = ranks(n);
    int[] prefix = tokens(8, 1);
    int[] tokens = concat(prefix, tokens(8, 2));
    cacheOnHostOnly(prefix, ranks);
    RadixNode[] computed = computeOnTheLoad(2, tokens, ranks);
    for (L3Rank r : ranks) {
      completeLoads(r, r.rank == n - 1);
      completeWrites(r);
    }
    L3Rank.sync(ranks);
    assertNeverCommitted(tokens, computed, ranks);
  }

  /**
   * The child's backup is ready everywhere while the parent's load still waits behind an earlier
   * load on one rank, and fails later: the write's commit cannot know yet, so it must not make
   * the child {@code COMMITTED} (nor queue its L3 put) while an ancestor's load is pending.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aBackupCommittedBeforeItsAncestorsLoadIsNeverCommittedNorWrittenToL3(int n) {
    L3Rank[] ranks = ranks(n);
    int[] other = tokens(8, 3);
    int[] prefix = tokens(8, 1);
    int[] tokens = concat(prefix, tokens(8, 2));
    cacheOnHostOnly(other, ranks);
    cacheOnHostOnly(prefix, ranks);
    for (L3Rank r : ranks) {
      assertThat(r.cache.admit(3, other).pendingLoads()).hasSize(1);
    }
    RadixNode[] computed = computeOnTheLoad(2, tokens, ranks);
    L3Rank slow = ranks[n - 1];
    for (L3Rank r : ranks) {
      if (r != slow) {
        completeLoads(r, false);
      }
      completeWrites(r);
    }
    L3Rank.sync(ranks);
    assertThat(slow.cache.pendingLoads()).as("both loads wait for the slow rank").isEqualTo(2);
    slow.memory.engine.completeLoad(false);
    slow.memory.engine.completeLoad(false);
    completeLoads(slow, true);
    L3Rank.sync(ranks);
    for (L3Rank r : ranks) {
      r.cache.finish(3);
    }
    assertNeverCommitted(tokens, computed, ranks);
  }
}
