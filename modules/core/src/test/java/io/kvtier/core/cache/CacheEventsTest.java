package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.testkit.TestSeeds;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The KV events: equal on a fast and a slow rank, and, replayed into per-medium block sets, equal
 * to what the tree holds after every operation, with hashes recomputed here independently of
 * {@link PageHasher}.
 */
class CacheEventsTest {
  private static final int[] A = {1, 2, 3, 4};
  private static final int[] B = {1, 2, 3, 4, 5, 6, 7, 8};

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  /** Records the events and replays them into per-medium sets, checking each as it comes. */
  static final class Replay implements CacheEventListener {
    final List<CacheEvent> events = new ArrayList<>();
    final Map<CacheMedium, Set<PageKey>> held = new EnumMap<>(CacheMedium.class);
    int stored;
    int removed;

    @Override
    public void onEvent(CacheEvent event) {
      events.add(event);
      Set<PageKey> set = held.computeIfAbsent(event.medium(), m -> new HashSet<>());
      switch (event) {
        case CacheEvent.BlocksStored s -> {
          assertThat(s.blockHashes())
              .isEqualTo(chain(s.namespace(), s.parentHash(), s.tokenIds(), s.blockSize()));
          s.parentHash()
              .ifPresent(
                  p ->
                      assertThat(set).as("parent of a block stored in %s", s.medium()).contains(p));
          for (PageKey k : s.blockHashes()) {
            assertThat(set.add(k)).as("%s stored twice in %s", k, s.medium()).isTrue();
          }
          stored += s.blockHashes().size();
        }
        case CacheEvent.BlocksRemoved r -> {
          for (PageKey k : r.blockHashes()) {
            assertThat(set.remove(k)).as("%s removed from %s, not held", k, r.medium()).isTrue();
          }
          removed += r.blockHashes().size();
        }
      }
    }

    Set<PageKey> held(CacheMedium medium) {
      return held.getOrDefault(medium, Set.of());
    }
  }

  static List<PageKey> chain(Optional<PageKey> parent, int[] tokens, int pageSize) {
    return chain(0, parent, tokens, pageSize);
  }

  /**
   * SHA-256 chained over 4-byte little-endian tokens, the first block of a namespace other than
   * 0 chained to SHA-256 of the namespace (8 bytes, little-endian); written here apart from
   * PageHasher.
   */
  static List<PageKey> chain(long namespace, Optional<PageKey> parent, int[] tokens, int pageSize) {
    try {
      List<PageKey> out = new ArrayList<>();
      byte[] previous = parent.map(PageKey::toBytes).orElse(null);
      if (previous == null && namespace != 0) {
        byte[] ns = new byte[8];
        for (int i = 0; i < 8; i++) {
          ns[i] = (byte) (namespace >>> (8 * i));
        }
        previous = MessageDigest.getInstance("SHA-256").digest(ns);
      }
      for (int p = 0; p < tokens.length / pageSize; p++) {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        if (previous != null) {
          md.update(previous);
        }
        for (int i = 0; i < pageSize; i++) {
          int t = tokens[p * pageSize + i];
          md.update(new byte[] {(byte) t, (byte) (t >> 8), (byte) (t >> 16), (byte) (t >> 24)});
        }
        previous = md.digest();
        out.add(PageKey.of(previous));
      }
      return out;
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  /** The blocks the tree holds in each medium, hashed from the root path (namespace 0). */
  static Map<CacheMedium, Set<PageKey>> treeBlocks(RankCache cache) {
    Map<CacheMedium, Set<PageKey>> out = new EnumMap<>(CacheMedium.class);
    out.put(CacheMedium.DEVICE, new HashSet<>());
    out.put(CacheMedium.HOST, new HashSet<>());
    int pageSize = cache.config().pageSize();
    for (RadixNode n : CacheProbe.nodes(cache)) {
      assertThat(n.namespace).isZero();
      List<Integer> path = new ArrayList<>();
      for (RadixNode m = n; m.parent != null; m = m.parent) {
        for (int i = m.keyLength - 1; i >= 0; i--) {
          path.add(0, m.keyTokens[m.keyOffset + i]);
        }
      }
      List<PageKey> all =
          chain(Optional.empty(), path.stream().mapToInt(Integer::intValue).toArray(), pageSize);
      List<PageKey> own = all.subList(all.size() - n.pageCount, all.size());
      if (n.deviceRuns != null) {
        out.get(CacheMedium.DEVICE).addAll(own);
      }
      if (n.hostSlots != null && n.backupState == BackupState.COMMITTED) {
        out.get(CacheMedium.HOST).addAll(own);
      }
    }
    return out;
  }

  @Test
  void fastAndSlowRanksReportTheSameEventsAndTheyReplayToTheTree() {
    TestSeeds.run(
        seed -> {
          Random master = new Random(seed);
          int demotions = 0;
          for (int i = 0; i < TestSeeds.scaled(6); i++) {
            long pairSeed = master.nextLong();
            Replay[] replay = {new Replay(), new Replay()};
            WritePolicy policy =
                i % 2 == 0 ? WritePolicy.WRITE_THROUGH : WritePolicy.WRITE_THROUGH_SELECTIVE;
            try (RankPair pair =
                new RankPair(pairSeed, policy, i % 3 == 0 ? 0.02 : 0, r -> replay[r])) {
              for (int step = 0; step < 250; step++) {
                String op = pair.step();
                try {
                  assertThat(replay[RankPair.SLOW].events)
                      .as("slow rank's events")
                      .isEqualTo(replay[RankPair.FAST].events);
                  Map<CacheMedium, Set<PageKey>> tree = treeBlocks(pair.cache(RankPair.FAST));
                  for (CacheMedium m : tree.keySet()) {
                    assertThat(replay[RankPair.FAST].held(m))
                        .as("%s blocks", m)
                        .isEqualTo(tree.get(m));
                  }
                } catch (AssertionError e) {
                  throw new AssertionError(
                      "after step " + step + " (" + op + ") of pair seed " + pairSeed, e);
                }
              }
              pair.drain();
              assertThat(replay[1].events).isEqualTo(replay[0].events);
              demotions += demotions(replay[0].events);
            }
          }
          assertThat(demotions).as("device removals of blocks still on the host").isPositive();
        });
  }

  /** Blocks removed from the device while the host holds them (at that point of the stream). */
  private static int demotions(List<CacheEvent> events) {
    Set<PageKey> host = new HashSet<>();
    int n = 0;
    for (CacheEvent e : events) {
      if (e instanceof CacheEvent.BlocksStored s && s.medium() == CacheMedium.HOST) {
        host.addAll(s.blockHashes());
      } else if (e instanceof CacheEvent.BlocksRemoved r) {
        if (r.medium() == CacheMedium.HOST) {
          host.removeAll(r.blockHashes());
        } else {
          n += (int) r.blockHashes().stream().filter(host::contains).count();
        }
      }
    }
    return n;
  }

  @Test
  void aDemotionRemovesFromTheDeviceOnlyAndALoadBackStoresThereAgain() {
    Replay replay = new Replay();
    CacheConfig config =
        CacheConfig.of(2, 16, 32)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withEvictionPolicy(EvictionPolicy.LRU);
    try (SimRank rank = new SimRank(0, config, new KvLayout(3, 1, 2, 2, 2), 7, 0, replay)) {
      RankCache c = rank.cache;
      c.admit(1, A);
      c.allocateTokens(1, A.length);
      c.finish(1);
      rank.advance(1_000_000_000L);
      c.commits().commitWrites(c.commits().readyWritePrefix());
      assertThat(c.evictDevice(16)).isEqualTo(2);
      c.admit(2, B);
      rank.advance(1_000_000_000L);
      c.commits().commitLoads(c.commits().readyLoadPrefix());
      c.allocateTokens(2, B.length);
      c.finish(2);

      List<PageKey> a = chain(Optional.empty(), A, 2);
      List<PageKey> b = chain(Optional.empty(), B, 2);
      assertThat(replay.events)
          .containsExactly(
              new CacheEvent.BlocksStored(CacheMedium.DEVICE, 0, a, Optional.empty(), A, 2),
              new CacheEvent.BlocksStored(CacheMedium.HOST, 0, a, Optional.empty(), A, 2),
              new CacheEvent.BlocksRemoved(CacheMedium.DEVICE, a),
              new CacheEvent.BlocksStored(CacheMedium.DEVICE, 0, a, Optional.empty(), A, 2),
              new CacheEvent.BlocksStored(
                  CacheMedium.DEVICE,
                  0,
                  b.subList(2, 4),
                  Optional.of(a.get(1)),
                  new int[] {5, 6, 7, 8},
                  2));
      assertThat(replay.held(CacheMedium.HOST)).containsExactlyInAnyOrderElementsOf(a);
    }
  }

  @Test
  void anL3WriteIsStoredInL3AndAPrefetchStoresOnTheHostThenTheLoadOnTheDevice() {
    FakeKvStore store = new FakeKvStore();
    L3Config l3 = L3Config.DEFAULTS.withPrefetchThreshold(L3Rank.PAGE);
    int[] t = new int[16];
    for (int i = 0; i < t.length; i++) {
      t[i] = 1 + i * 7;
    }
    List<PageKey> keys = chain(Optional.empty(), t, L3Rank.PAGE);
    Replay writer = new Replay();
    L3Rank w = new L3Rank(0, 1, store, l3, 32, 64, writer);
    w.serve(1, t);
    L3Rank.sync(w);
    w.executor.runAll();
    L3Rank.sync(w);
    assertThat(writer.events)
        .extracting(CacheEvent::medium)
        .containsExactly(CacheMedium.DEVICE, CacheMedium.HOST, CacheMedium.L3);
    assertThat(writer.held(CacheMedium.L3)).containsExactlyInAnyOrderElementsOf(keys);

    Replay reader = new Replay();
    L3Rank r = new L3Rank(0, 1, store, l3, 32, 64, reader);
    assertThat(r.cache.startPrefetch(7, t, RequestOptions.DEFAULT)).isTrue();
    for (int i = 0; i < 3; i++) {
      L3Rank.sync(r);
      r.executor.runAll();
    }
    L3Rank.sync(r);
    assertThat(r.cache.prefetchState(7)).isEqualTo(RankCache.PrefetchState.DONE);
    assertThat(reader.events)
        .containsExactly(
            new CacheEvent.BlocksStored(CacheMedium.HOST, 0, keys, Optional.empty(), t, 4));
    r.cache.admit(7, t);
    assertThat(reader.held(CacheMedium.DEVICE)).containsExactlyInAnyOrderElementsOf(keys);
    r.memory.engine.completeAll();
    L3Rank.sync(r);
    r.cache.finish(7);
  }

  /**
   * The event listener is called in the middle of the change it reports: once an engine bound the
   * cache, a replicated mutator the listener calls (a {@code match}, which touches the nodes'
   * clocks) is refused before it changes anything; an unbound cache refuses nothing.
   */
  @Test
  void aCacheMutatorCalledFromTheEventListenerOfABoundCacheIsRefused() {
    List<String> refused = new ArrayList<>();
    List<CacheEvent> seen = new ArrayList<>();
    RankCache[] cache = new RankCache[1];
    CacheEventListener matching =
        event -> {
          seen.add(event);
          try {
            cache[0].match(0, A);
          } catch (IllegalStateException e) {
            refused.add(e.getMessage());
          }
        };
    cache[0] = RankCache.builder(CacheConfig.of(2, 16, 0)).events(matching).build();
    CacheSchedule token = cache[0].bindSchedule(1);
    token.enter();
    try {
      cache[0].admit(1, A, RequestOptions.DEFAULT);
      cache[0].allocateTokens(1, A.length);
      long clock = cache[0].readOnly().logicalClock();
      cache[0].finish(1);
      assertThat(seen).hasSize(1);
      assertThat(refused)
          .singleElement()
          .asString()
          .startsWith("RankCache.match called from a callback of a RankEngine step");
      assertThat(cache[0].readOnly().logicalClock())
          .as("only the finish's own insert moved the clock")
          .isEqualTo(clockAfterPlainFinish(clock));
    } finally {
      token.exit();
    }
    // Unbound: the listener's match goes through, as before.
    refused.clear();
    cache[0] = RankCache.builder(CacheConfig.of(2, 16, 0)).events(matching).build();
    cache[0].admit(1, A, RequestOptions.DEFAULT);
    cache[0].allocateTokens(1, A.length);
    cache[0].finish(1);
    assertThat(refused).isEmpty();
  }

  /** The logical clock a finish of request 1 leaves, measured on a cache without a listener. */
  private static long clockAfterPlainFinish(long before) {
    RankCache plain = RankCache.builder(CacheConfig.of(2, 16, 0)).build();
    plain.admit(1, A, RequestOptions.DEFAULT);
    plain.allocateTokens(1, A.length);
    long start = plain.readOnly().logicalClock();
    plain.finish(1);
    return before + (plain.readOnly().logicalClock() - start);
  }

  @Test
  void aNamespaceIsInTheFirstBlocksHash() {
    Replay replay = new Replay();
    RankCache c = RankCache.builder(CacheConfig.of(2, 16, 0)).events(replay).build();
    c.admit(1, A, RequestOptions.DEFAULT);
    c.allocateTokens(1, A.length);
    c.finish(1);
    c.admit(2, A, RequestOptions.DEFAULT.withNamespace(5));
    c.allocateTokens(2, A.length);
    c.finish(2);
    assertThat(replay.events).hasSize(2);
    var first = (CacheEvent.BlocksStored) replay.events.get(0);
    var other = (CacheEvent.BlocksStored) replay.events.get(1);
    assertThat(other.namespace()).isEqualTo(5);
    assertThat(other.parentHash()).isEmpty();
    assertThat(other.blockHashes()).doesNotContainAnyElementsOf(first.blockHashes());
    assertThat(other.blockHashes())
        .isEqualTo(PageHasher.pageKeys(5, A, 2))
        .isEqualTo(chain(5, Optional.empty(), A, 2));
  }

  @Test
  void theBuilderRefusesPartsWithoutWhatTheyNeedAndPartsGivenTwice() {
    CacheConfig config = CacheConfig.of(2, 16, 32);
    assertThatThrownBy(() -> RankCache.builder(config).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hostPages=32");
    RankCacheBuilder b = RankCache.builder(CacheConfig.of(2, 16, 0)).events(e -> {});
    assertThatThrownBy(() -> b.events(e -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("events was already set");
  }
}
