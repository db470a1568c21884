package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The incremental checks ({@link CacheInvariants#checkChanged}, the digest kept by {@link
 * ReplicaDigest#of}) against state corrupted directly: what a room changes and marks is caught
 * by the incremental check at once; what changes without a mark is caught by the full check
 * ({@link CacheInvariants#check}), so at the simulator's cadence (incremental after every tick,
 * full every {@code fullCheckInterval} ticks) within that many ticks.
 */
class IncrementalChecksTest {
  private static final int INTERVAL = 8;

  private static RankCache cache() {
    FakeKvMemory memory = new FakeKvMemory(FakeKvMemory.smallLayout(2), 64, 128);
    return RankCache.withMemory(
        CacheConfig.of(2, 64, 128)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withEvictionPolicy(EvictionPolicy.LRU),
        memory.device,
        memory.host,
        memory.engine);
  }

  private static void serve(RankCache cache, long id, int[] tokens) {
    cache.admit(id, tokens);
    cache.allocateTokens(id, tokens.length);
    cache.finish(id);
  }

  /** One simulated tick: a request that shares a prefix with the others, then the checks. */
  private static void tick(RankCache cache, long tick) {
    int[] tokens = {1, 2, 3, 4, (int) (tick % 5), 7, (int) tick + 10, 9};
    serve(cache, tick + 1, tokens);
    if (tick % INTERVAL == 0) {
      CacheInvariants.check(cache);
    } else {
      CacheInvariants.checkChanged(cache);
    }
  }

  private static RadixNode someLeaf(RankCache cache) {
    for (RadixNode n : CacheProbe.nodes(cache)) {
      if (n.parent != null && n.childCount == 0 && n.resident()) {
        return n;
      }
    }
    throw new AssertionError("no resident leaf");
  }

  private static RadixNode someInner(RankCache cache) {
    for (RadixNode n : CacheProbe.nodes(cache)) {
      if (n.parent != null && n.childCount > 0) {
        return n;
      }
    }
    throw new AssertionError("no inner node");
  }

  /** Corruptions that go through a mark, as a room's own wrong update would. */
  private static Map<String, Consumer<RankCache>> marked() {
    Map<String, Consumer<RankCache>> m = new LinkedHashMap<>();
    m.put("lockRef", c -> mark(c, someLeaf(c)).lockRef++);
    m.put("child count", c -> mark(c, someInner(c)).childCount++);
    m.put("resident children", c -> mark(c, someInner(c)).residentChildren++);
    m.put("backup state", c -> mark(c, someLeaf(c)).backupState = BackupState.NONE);
    m.put("device bit", c -> mark(c, someInner(c)).deviceRuns = null);
    m.put("key length", c -> mark(c, someLeaf(c)).keyLength++);
    m.put("hostRef", c -> mark(c, someLeaf(c)).hostRef++);
    m.put("device evictable", c -> c.rooms().ledger().deviceEvictable++);
    m.put("request pages", c -> c.rooms().ledger().requestPages++);
    m.put("node count", c -> c.rooms().tree().nodeCount++);
    return m;
  }

  /** Corruptions that no room marks: only the full check sees them. */
  private static Map<String, Consumer<RankCache>> unmarked() {
    Map<String, Consumer<RankCache>> m = new LinkedHashMap<>();
    m.put("hitCount", c -> someLeaf(c).hitCount++);
    m.put("lastAccess", c -> someLeaf(c).lastAccess += 1000);
    m.put("lockRef", c -> someLeaf(c).lockRef++);
    m.put(
        "key token",
        c -> {
          RadixNode n = someLeaf(c);
          n.keyTokens = n.keyTokens.clone();
          n.keyTokens[n.keyOffset] += 1;
        });
    m.put(
        "device slot owned twice",
        c -> {
          RadixNode a = someLeaf(c);
          RadixNode b = someInner(c);
          // Replace in place, as a wrong in-place update would: the kept terms do not move.
          b.deviceRuns[0] = a.deviceRuns[0];
        });
    return m;
  }

  private static RadixNode mark(RankCache cache, RadixNode n) {
    cache.rooms().tree().changed.mark(n);
    return n;
  }

  @Test
  void theIncrementalDigestEqualsTheFullOneAfterEveryOperation() {
    RankCache cache = cache();
    for (long t = 0; t < 40; t++) {
      tick(cache, t);
      assertThat(cache.replicaDigest()).as("tick %d", t).isEqualTo(ReplicaDigest.full(cache));
    }
    cache.evictDevice(64);
    assertThat(cache.replicaDigest()).isEqualTo(ReplicaDigest.full(cache));
    CacheInvariants.check(cache);
  }

  @Test
  void aMarkedCorruptionIsCaughtByTheIncrementalCheckAtOnce() {
    for (Map.Entry<String, Consumer<RankCache>> e : marked().entrySet()) {
      RankCache cache = cache();
      for (long t = 0; t < 12; t++) {
        tick(cache, t);
      }
      cache.replicaDigest();
      e.getValue().accept(cache);
      Throwable thrown = null;
      try {
        CacheInvariants.checkChanged(cache);
      } catch (RuntimeException caught) {
        thrown = caught;
      }
      assertThat(thrown).as(e.getKey()).isInstanceOf(CacheInvariantException.class);
    }
  }

  @Test
  void anUnmarkedCorruptionIsCaughtByTheFullCheckWithinTheInterval() {
    for (Map.Entry<String, Consumer<RankCache>> e : unmarked().entrySet()) {
      RankCache cache = cache();
      long corruptedAt = 11;
      for (long t = 0; t < corruptedAt; t++) {
        tick(cache, t);
      }
      long before = cache.replicaDigest();
      e.getValue().accept(cache);
      if (!e.getKey().equals("device slot owned twice")) {
        // The documented limit: the kept digest does not see an unmarked change...
        assertThat(cache.replicaDigest()).as(e.getKey()).isEqualTo(before);
        // ...the full one does.
        assertThat(ReplicaDigest.full(cache)).as(e.getKey()).isNotEqualTo(before);
      }
      long caughtAt = -1;
      for (long t = corruptedAt; t < corruptedAt + 2 * INTERVAL && caughtAt < 0; t++) {
        try {
          tick(cache, t);
        } catch (CacheInvariantException caught) {
          caughtAt = t;
        }
      }
      assertThat(caughtAt).as(e.getKey() + ": caught at tick").isNotNegative();
      assertThat(caughtAt).as(e.getKey()).isLessThanOrEqualTo(corruptedAt + INTERVAL);
    }
  }

  @Test
  void aNodeChangedWithoutAMarkIsNamedByTheFullCheck() {
    RankCache cache = cache();
    for (long t = 0; t < 6; t++) {
      tick(cache, t);
    }
    cache.replicaDigest();
    someLeaf(cache).hitCount += 3;
    assertThatThrownBy(() -> CacheInvariants.check(cache))
        .isInstanceOf(CacheInvariantException.class)
        .hasMessageContaining("changed without a mark in ChangedNodes");
  }
}
