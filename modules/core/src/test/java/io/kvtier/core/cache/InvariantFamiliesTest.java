package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * One violation per family of {@link CacheInvariants} (QueueMembership, TreeInvariants,
 * NodeInvariants, SnapshotInvariants, RequestInvariants, QueueInvariants, the SlotTally,
 * PoolInvariants, IdleInvariants), made on a healthy cache: each is reported with its own family's message, by
 * the full check and, where the family runs there too, by the incremental one.
 */
class InvariantFamiliesTest {

  private static RankCache cache() {
    return cache(new FakeKvMemory(FakeKvMemory.smallLayout(2), 64, 128));
  }

  private static RankCache cache(FakeKvMemory memory) {
    RankCache cache =
        RankCache.withMemory(
            CacheConfig.of(2, 64, 128)
                .withWritePolicy(WritePolicy.WRITE_THROUGH)
                .withEvictionPolicy(EvictionPolicy.LRU),
            memory.device,
            memory.host,
            memory.engine);
    for (int i = 0; i < 6; i++) {
      int[] tokens = {1, 2, 3, 4, i, 7, i + 10, 9};
      cache.admit(i + 1, tokens);
      cache.allocateTokens(i + 1, tokens.length);
      cache.finish(i + 1);
    }
    CacheInvariants.check(cache);
    return cache;
  }

  private static RadixNode leaf(RankCache cache) {
    for (RadixNode n : CacheProbe.nodes(cache)) {
      if (n.parent != null && n.childCount == 0 && n.resident()) {
        return n;
      }
    }
    throw new AssertionError("no resident leaf");
  }

  private static RadixNode marked(RankCache cache, RadixNode n) {
    cache.rooms().tree().changed.mark(n);
    return n;
  }

  /** The corruption fails the full check, and the incremental one if {@code incremental}. */
  private static void caught(Consumer<RankCache> corrupt, String message, boolean incremental) {
    RankCache full = cache();
    corrupt.accept(full);
    assertThatThrownBy(() -> CacheInvariants.check(full))
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining(message);
    if (incremental) {
      RankCache changed = cache();
      CacheInvariants.checkChanged(changed);
      corrupt.accept(changed);
      assertThatThrownBy(() -> CacheInvariants.checkChanged(changed))
          .isInstanceOf(CacheInvariantException.class)
          .hasMessageContaining(message);
    }
  }

  @Test
  void queueMembershipRefusesAReleasedLockStillRegistered() {
    caught(c -> c.lock(leaf(c)).released = true, "is released but still registered", true);
  }

  @Test
  void theTreeWalkCountsTheNodes() {
    caught(c -> c.rooms().tree().nodeCount++, "nodeCount=", true);
  }

  @Test
  void theTreeWalkChecksLockCounts() {
    caught(c -> marked(c, leaf(c)).lockRef++, "locks are held", true);
  }

  @Test
  void nodeRulesCheckI4() {
    caught(c -> marked(c, leaf(c)).keyLength++, "I4: ", true);
  }

  @Test
  void nodeRulesCheckI2() {
    caught(
        c -> {
          RadixNode n = marked(c, leaf(c));
          n.deviceRuns = null;
          n.hostSlots = null;
          n.backupState = BackupState.NONE;
          // The parent's count follows, so that I2 is the only node rule broken: the tree walk's
          // count check would otherwise fire first where it meets the parent first (the order
          // the changed nodes come in is not fixed).
          n.parent.residentChildren--;
        },
        "I2: ",
        true);
  }

  @Test
  void snapshotRulesRefuseASnapshotWithoutSnapshotSlots() {
    caught(c -> marked(c, leaf(c)).stateSlots = new int[] {0}, "I7: ", true);
  }

  @Test
  void requestRulesCheckTheLockedPrefix() {
    caught(
        c -> {
          c.admit(99, new int[] {1, 2, 3, 4, 5, 6});
          c.rooms().requests().get(99L).prefixLength += 2;
        },
        "not in the tree or not at the prefix's end",
        true);
  }

  @Test
  void queueRulesCheckTheWriteBackPages() {
    caught(c -> c.rooms().ledger().writeBackPages++, "writeBackPages=", true);
  }

  @Test
  void thePoolCheckComparesTheLedgerWithTheTree() {
    caught(c -> c.rooms().ledger().deviceEvictable++, "device accounting: ", true);
  }

  @Test
  void theSlotTallyFindsASlotOwnedTwiceInTheFullRun() {
    caught(
        c -> {
          RadixNode a = leaf(c);
          for (RadixNode b : CacheProbe.nodes(c)) {
            if (b != a && b.parent != null && b.resident()) {
              b.deviceRuns[0] = a.deviceRuns[0];
              return;
            }
          }
        },
        "owned twice",
        false);
  }

  @Test
  void theIdleCheckFindsAnActiveRequest() {
    FakeKvMemory memory = new FakeKvMemory(FakeKvMemory.smallLayout(2), 64, 128);
    RankCache cache = cache(memory);
    memory.engine.completeAll();
    cache.sync();
    CacheInvariants.checkIdle(cache);
    cache.admit(99, new int[] {1, 2, 3, 4, 5, 6});
    assertThatCode(() -> CacheInvariants.check(cache)).doesNotThrowAnyException();
    assertThatThrownBy(() -> CacheInvariants.checkIdle(cache))
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("not idle: 1 requests are active");
  }
}
