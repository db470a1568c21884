package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The victim order of each policy on a fixed history (CACHE.md §6). */
class EvictionOrderTest {

  private static void serve(RankCache cache, long id, int first, int priority) {
    int[] tokens = {first, 100 + first};
    cache.admit(id, tokens, RequestOptions.DEFAULT.withPriority(priority));
    cache.allocateTokens(id, 2);
    cache.finish(id);
  }

  /**
   * History: serve A, B, C, D (created in that order, priorities 2, 5, 1, 0); serve A twice
   * more (hits 3); serve C again (hits 2); touch B by a match. Then lastAccess is D < A < C < B.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "LRU, DACB",
    "MRU, BCAD",
    "FIFO, ABCD",
    "FILO, DCBA",
    "LFU, DBCA",
    "SLRU, DBAC",
    "PRIORITY, DCAB"
  })
  void victimsFollowThePolicy(EvictionPolicy policy, String expected) {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, 64, 0).withEvictionPolicy(policy));
    serve(cache, 1, 'A', 2);
    serve(cache, 2, 'B', 5);
    serve(cache, 3, 'C', 1);
    serve(cache, 4, 'D', 0);
    serve(cache, 5, 'A', 0);
    serve(cache, 6, 'A', 0);
    serve(cache, 7, 'C', 0);
    cache.match(0, new int[] {'B', 100 + 'B'});
    List<Character> victims = new ArrayList<>();
    cache.rooms().evictor().observer =
        (host, node) -> victims.add((char) node.keyTokens[node.keyOffset]);
    for (int i = 0; i < 4; i++) {
      assertThat(cache.evictDevice(2)).isEqualTo(2);
      CacheInvariants.check(cache);
    }
    StringBuilder order = new StringBuilder();
    victims.forEach(order::append);
    assertThat(order.toString()).isEqualTo(expected);
    assertThat(cache.nodeCount()).isZero();
    assertThat(cache.evictDevice(1)).isZero();
    CacheInvariants.checkIdle(cache);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"LRU", "FIFO", "MRU"})
  void lockedAndInnerNodesAreNeverVictims(EvictionPolicy policy) {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, 8, 0).withEvictionPolicy(policy));
    int[] a = {1, 2, 3, 4};
    cache.admit(1, a);
    cache.allocate(1, 4);
    cache.finish(1);
    cache.admit(2, new int[] {1, 2, 9, 9});
    cache.allocate(2, 2);
    // Request 2 locks [1, 2]; only the leaf [3, 4] can go.
    assertThat(cache.evictDevice(8)).isEqualTo(2);
    assertThat(cache.deviceUsage().evictable()).isZero();
    cache.finish(2);
    assertThat(cache.evictDevice(8)).isEqualTo(4);
    CacheInvariants.checkIdle(cache);
  }
}
