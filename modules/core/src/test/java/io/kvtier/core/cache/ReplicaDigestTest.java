package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * {@link RankCache#replicaDigest()}: equal after the same operations, blind to copy progress,
 * and changed by a flip of any single replicated field. The fixture holds every kind of state at
 * once: committed, pending and loading nodes, a second namespace, active requests with and
 * without a prepared backup, an explicit lock, both FIFOs non-empty.
 */
class ReplicaDigestTest {
  private static final int[] A = {1, 2, 3, 4};
  private static final int[] B = {1, 2, 3, 4, 5, 6, 7, 8};
  private static final int[] X = {9, 9, 9, 9};

  /** The cache and its memory, built by {@link #fixture()}. */
  private record Fixture(RankCache cache, FakeKvMemory memory) {
    RadixNode node(int[] tokens) {
      return cache.match(0, tokens).lastDeviceNode();
    }

    RadixNode peek(long namespace, int[] tokens) {
      // Walk by tokens without touching (a match would change lastAccess).
      RadixNode n = cache.rooms().tree().roots.get(namespace);
      int pos = 0;
      while (pos < tokens.length) {
        RadixNode next = null;
        for (RadixNode c : CacheProbe.children(n)) {
          if (c.keyTokens[c.keyOffset] == tokens[pos]) {
            next = c;
          }
        }
        n = next;
        pos += n.keyLength;
      }
      return n;
    }
  }

  private static Fixture fixture() {
    FakeKvMemory memory = new FakeKvMemory(FakeKvMemory.smallLayout(2), 16, 32);
    RankCache cache =
        RankCache.withMemory(
            CacheConfig.of(2, 16, 32)
                .withWritePolicy(WritePolicy.WRITE_THROUGH)
                .withEvictionPolicy(EvictionPolicy.LRU),
            memory.device,
            memory.host,
            memory.engine);
    serve(cache, 1, 0, A);
    memory.engine.completeAll();
    cache.sync();
    cache.evictDevice(16);
    serve(cache, 2, 0, X);
    serve(cache, 3, 5, new int[] {3, 3});
    // Request 4 loads A back (pending load); request 5 computes B on top with a prepared backup.
    assertThat(cache.admit(4, A).loadedLength()).isEqualTo(4);
    cache.admit(5, B);
    cache.allocateTokens(5, B.length);
    assertThat(cache.prepareBackup(5)).isTrue();
    cache.streamLayer(5, 1);
    cache.lock(cache.match(0, X).lastDeviceNode());
    return new Fixture(cache, memory);
  }

  private static void serve(RankCache cache, long id, long namespace, int[] tokens) {
    cache.admit(id, tokens, RequestOptions.DEFAULT.withNamespace(namespace));
    cache.allocateTokens(id, tokens.length);
    cache.finish(id);
  }

  @Test
  void theSameOperationsGiveTheSameDigest() {
    Fixture one = fixture();
    Fixture two = fixture();
    CacheInvariants.check(one.cache());
    assertThat(one.cache().pendingWrites()).isEqualTo(2);
    assertThat(one.cache().pendingLoads()).isEqualTo(1);
    assertThat(two.cache().replicaDigest()).isEqualTo(one.cache().replicaDigest());
    assertThat(one.cache().replicaDigest()).as("stable").isEqualTo(one.cache().replicaDigest());
    // Finishing request 5 attaches its backup; both caches still agree, and differ from before.
    long before = one.cache().replicaDigest();
    one.cache().finish(5);
    two.cache().finish(5);
    assertThat(two.cache().replicaDigest())
        .isEqualTo(one.cache().replicaDigest())
        .isNotEqualTo(before);
  }

  @Test
  void copyProgressDoesNotEnterTheDigest() {
    Fixture f = fixture();
    long before = f.cache().replicaDigest();
    f.memory().engine.completeAll();
    assertThat(f.cache().commits().readyWritePrefix()).isEqualTo(2);
    assertThat(f.cache().commits().readyLoadPrefix()).isEqualTo(1);
    assertThat(f.cache().isLoadLayerReady(f.cache().rooms().loadBacks().loads.peek(), 0)).isTrue();
    assertThat(f.cache().replicaDigest()).isEqualTo(before);
    f.cache().sync();
    assertThat(f.cache().replicaDigest()).as("the commit is replicated").isNotEqualTo(before);
  }

  @Test
  void everySingleReplicatedFieldChangesTheDigest() {
    long reference = fixture().cache().replicaDigest();
    Map<String, Consumer<Fixture>> flips = new LinkedHashMap<>();
    // Per node.
    flips.put(
        "key token",
        f -> {
          RadixNode n = f.peek(0, X);
          n.keyTokens = n.keyTokens.clone();
          n.keyTokens[n.keyOffset + 3] = 8;
        });
    flips.put(
        "parent",
        f -> {
          RadixNode b = f.peek(0, X);
          b.parent = f.peek(0, A);
        });
    flips.put(
        "device slot",
        f -> {
          RadixNode n = f.peek(0, X);
          n.deviceRuns = n.deviceRuns.clone();
          n.deviceRuns[0] = 15;
        });
    flips.put("device bit", f -> f.peek(5, new int[] {3, 3}).deviceRuns = null);
    flips.put(
        "host slot",
        f -> {
          RadixNode n = f.peek(0, X);
          n.hostSlots = n.hostSlots.clone();
          n.hostSlots[n.hostOffset] = 31;
        });
    flips.put("host bit", f -> f.peek(0, A).hostSlots = null);
    flips.put("backup state", f -> f.peek(0, X).backupState = BackupState.COMMITTED);
    flips.put("pending write", f -> f.peek(0, X).pendingWrite = null);
    flips.put("pending load", f -> f.peek(0, A).pendingLoad = null);
    flips.put("write-back flag", f -> f.peek(0, X).evictAfterBackup = true);
    flips.put("failed-load mark", f -> f.peek(0, A).invalid = RadixNode.UNTRUSTED);
    flips.put("lockRef", f -> f.peek(0, X).lockRef++);
    flips.put("hostRef", f -> f.peek(0, A).hostRef++);
    flips.put("hitCount", f -> f.peek(0, X).hitCount++);
    flips.put("priority", f -> f.peek(0, X).priority++);
    flips.put("lastAccess", f -> f.peek(0, X).lastAccess++);
    flips.put("created", f -> f.peek(0, X).created++);
    flips.put("child count", f -> f.peek(0, A).childCount++);
    // Pools, clocks, counters.
    flips.put("device evictable", f -> f.cache().rooms().ledger().deviceEvictable++);
    flips.put("device protected", f -> f.cache().rooms().ledger().deviceProtected++);
    flips.put("host evictable", f -> f.cache().rooms().ledger().hostEvictable++);
    flips.put("host protected", f -> f.cache().rooms().ledger().hostProtected++);
    flips.put("request pages", f -> f.cache().rooms().ledger().requestPages++);
    flips.put("reserved host pages", f -> f.cache().rooms().ledger().reservedHostPages++);
    flips.put("write-back pages", f -> f.cache().rooms().ledger().writeBackPages++);
    flips.put("logical clock", f -> f.cache().rooms().tree().clock++);
    flips.put(
        "node-id counter",
        f -> {
          // A namespace root created and dropped again: only the id counter and the clock move.
          f.cache().admit(99, new int[] {1}, RequestOptions.DEFAULT.withNamespace(42));
          f.cache().abort(99);
        });
    flips.put(
        "stats", f -> f.cache().rooms().backups().counters.increment(CacheCounter.CATCH_UP_LAYERS));
    // FIFOs.
    flips.put(
        "write FIFO order",
        f -> {
          List<WriteAck> acks = new ArrayList<>(f.cache().rooms().backups().writes);
          f.cache().rooms().backups().writes.clear();
          f.cache().rooms().backups().writes.add(acks.get(1));
          f.cache().rooms().backups().writes.add(acks.get(0));
        });
    flips.put("write ack nodes", f -> f.cache().rooms().backups().writes.peek().nodes.clear());
    flips.put("write sequence", f -> f.cache().rooms().backups().writeSequence++);
    flips.put("load ack nodes", f -> f.cache().rooms().loadBacks().loads.peek().nodes.clear());
    flips.put("load sequence", f -> f.cache().rooms().loadBacks().loadSequence++);
    // Active requests and locks.
    flips.put("request prefix", f -> f.cache().rooms().requests().get(5L).prefixLength += 2);
    flips.put("request own slot", f -> f.cache().rooms().requests().get(5L).own.runs()[0] = 14);
    flips.put("request own count", f -> f.cache().rooms().requests().get(5L).own.dropFront(1));
    flips.put(
        "request lock node", f -> f.cache().rooms().requests().get(4L).lockNode = f.peek(0, X));
    flips.put("request removed", f -> f.cache().rooms().requests().remove(4L));
    flips.put("prepared pages", f -> f.cache().rooms().requests().get(5L).prepared.pages--);
    flips.put(
        "prepared host slot", f -> f.cache().rooms().requests().get(5L).prepared.hostSlots[0] = 30);
    flips.put("streamed layer", f -> f.cache().rooms().requests().get(5L).prepared.markStreamed(0));
    flips.put("prepared dropped", f -> f.cache().rooms().requests().get(5L).prepared = null);
    flips.put("explicit lock", f -> f.cache().lock(f.peek(0, A)));

    List<String> unchanged = new ArrayList<>();
    for (Map.Entry<String, Consumer<Fixture>> flip : flips.entrySet()) {
      Fixture f = fixture();
      flip.getValue().accept(f);
      if (f.cache().replicaDigest() == reference) {
        unchanged.add(flip.getKey());
      }
    }
    assertThat(unchanged).as("flips the digest did not see").isEmpty();
  }
}
