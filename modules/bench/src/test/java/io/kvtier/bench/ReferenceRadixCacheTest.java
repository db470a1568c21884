package io.kvtier.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.bench.ReferenceRadixCache.Match;
import io.kvtier.simulator.workload.FixedTraces;
import io.kvtier.testkit.SeedExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
class ReferenceRadixCacheTest {

  private static int[] tokens(int... t) {
    return t;
  }

  private static void assertIdle(ReferenceRadixCache cache, long capacity) {
    cache.checkInvariants();
    assertThat(cache.protectedTokens()).isZero();
    assertThat(cache.treeTokens()).isEqualTo(cache.evictableTokens());
    assertThat(cache.freeTokens() + cache.evictableTokens()).isEqualTo(capacity);
  }

  @Test
  void aMatchEndingInsideANodeSplitsIt() {
    ReferenceRadixCache cache = new ReferenceRadixCache(1, 100);
    cache.replay(tokens(1, 2, 3, 4));

    Match m = cache.match(tokens(1, 2, 9));

    assertThat(m.length()).isEqualTo(2);
    cache.checkInvariants();
    assertThat(cache.insert(tokens(1, 2, 9), 3)).isEqualTo(2);
    assertThat(cache.treeTokens()).isEqualTo(5);
    assertThat(cache.match(tokens(1, 2, 3, 4, 5)).length()).isEqualTo(4);
    assertThat(cache.match(tokens(1, 2, 9)).length()).isEqualTo(3);
  }

  @Test
  void pagesMatchWholeAndTheUnalignedTailIsNeverCached() {
    ReferenceRadixCache cache = new ReferenceRadixCache(4, 100);

    assertThat(cache.replay(tokens(1, 2, 3, 4, 5, 6, 7, 8, 9, 10))).isZero();
    assertIdle(cache, 100);
    assertThat(cache.treeTokens()).isEqualTo(8);

    // the second page differs in its last token: only the first page matches
    assertThat(cache.replay(tokens(1, 2, 3, 4, 5, 6, 7, 0, 9))).isEqualTo(4);
    assertThat(cache.replay(tokens(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))).isEqualTo(8);
    assertIdle(cache, 100);
  }

  @Test
  void evictionTakesTheLeastRecentlyUsedLeafAndAMatchTouchesTheNodeItSplits() {
    ReferenceRadixCache cache = new ReferenceRadixCache(1, 10);
    cache.replay(tokens(1, 2, 3));
    cache.replay(tokens(4, 5, 6));
    // splits [1,2,3] into [1,2] -> [3], touching [3] on the way, and adds the leaf [7]
    assertThat(cache.replay(tokens(1, 2, 7))).isEqualTo(2);
    assertThat(cache.freeTokens()).isEqualTo(3);

    // needs 4 with 3 free: the shortfall of 1 evicts the least recent leaf, [4,5,6], whole
    assertThat(cache.replay(tokens(8, 9, 10, 11))).isZero();

    assertIdle(cache, 10);
    assertThat(cache.freeTokens()).isEqualTo(2);
    assertThat(cache.match(tokens(1, 2, 3)).length()).isEqualTo(3);
    assertThat(cache.match(tokens(4, 5, 6)).length()).isZero();
  }

  @Test
  void withKvtiersSplitRuleTheUnmatchedSuffixKeepsItsAgeAndGoesFirst() {
    ReferenceRadixCache cache =
        new ReferenceRadixCache(
            1,
            10,
            ReferenceRadixCache.EvictionAmount.SHORTFALL,
            ReferenceRadixCache.SplitTouch.MATCHED_PREFIX);
    cache.replay(tokens(1, 2, 3));
    cache.replay(tokens(4, 5, 6));
    // splits [1,2,3] into [1,2] -> [3] without touching [3], which stays older than [4,5,6]
    assertThat(cache.replay(tokens(1, 2, 7))).isEqualTo(2);

    // the shortfall of 1 takes the least recent leaf: [3] this time, not [4,5,6]
    assertThat(cache.replay(tokens(8, 9, 10, 11))).isZero();

    assertIdle(cache, 10);
    assertThat(cache.freeTokens()).isZero();
    assertThat(cache.match(tokens(1, 2, 3)).length()).isEqualTo(2);
    assertThat(cache.match(tokens(4, 5, 6)).length()).isEqualTo(3);
  }

  @Test
  void evictionFreesAtLeastTheRequestAndReachesParentsThatBecomeLeaves() {
    ReferenceRadixCache cache = new ReferenceRadixCache(1, 100);
    cache.replay(tokens(1, 2, 3));
    cache.replay(tokens(1, 2, 4));
    cache.replay(tokens(5, 6, 7));

    // [3] is the least recent leaf: it was touched by the match that split [1,2,3]
    assertThat(cache.evict(1)).isEqualTo(1);
    // [4] frees only 1 of 2, so its parent [1,2], now a leaf older than [5,6,7], goes too
    assertThat(cache.evict(2)).isEqualTo(3);
    cache.checkInvariants();
    assertThat(cache.match(tokens(1, 2)).length()).isZero();
    assertThat(cache.match(tokens(5, 6, 7)).length()).isEqualTo(3);
    assertThat(cache.evict(1_000)).isEqualTo(3);
    assertIdle(cache, 100);
    assertThat(cache.treeTokens()).isZero();
  }

  @Test
  void lockedPathsAreNotEvicted() {
    ReferenceRadixCache cache = new ReferenceRadixCache(1, 100);
    cache.replay(tokens(1, 2, 3));
    cache.replay(tokens(4, 5, 6));
    Match m = cache.match(tokens(1, 2, 3));
    cache.lock(m.node());

    assertThat(cache.protectedTokens()).isEqualTo(3);
    assertThat(cache.evict(1_000)).isEqualTo(3);
    cache.checkInvariants();
    assertThat(cache.treeTokens()).isEqualTo(3);

    cache.unlock(m.node());
    assertThat(cache.evict(1_000)).isEqualTo(3);
    assertIdle(cache, 100);
    assertThatThrownBy(() -> cache.unlock(m.node())).hasMessageContaining("unlock without lock");
  }

  @Test
  void aRequestLargerThanThePoolIsAnErrorThatSaysWhatToDo() {
    ReferenceRadixCache cache = new ReferenceRadixCache(1, 4);

    assertThatThrownBy(() -> cache.replay(tokens(1, 2, 3, 4, 5)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "pool of 4 tokens cannot hold a request needing 5: 4 free, 0 protected; raise the"
                + " capacity");
  }

  @Test
  void unboundedHitsEqualTheLongestCommonPrefixWithAnyEarlierPrompt(Random random) {
    for (int round = 0; round < 20; round++) {
      int pageSize = List.of(1, 2, 4, 16).get(random.nextInt(4));
      int[][] prompts = randomPrompts(random, 60, 4 + random.nextInt(6));
      ReferenceRadixCache cache = new ReferenceRadixCache(pageSize, ReferenceRadixCache.UNBOUNDED);

      for (int i = 0; i < prompts.length; i++) {
        long expected = longestEarlierPrefix(prompts, i) / pageSize * pageSize;
        assertThat(cache.replay(prompts[i]))
            .as("request %d, page %d", i, pageSize)
            .isEqualTo(expected);
        cache.checkInvariants();
      }
    }
  }

  @Test
  void fixedTracesAtPageOneHitTheLongestCommonPrefixIncludingChanceMatches() {
    for (int[][] prompts :
        List.of(FixedTraces.multiturn().prompts(), FixedTraces.sharedPrefix().prompts())) {
      ReferenceRadixCache cache = new ReferenceRadixCache(1, ReferenceRadixCache.UNBOUNDED);
      for (int i = 0; i < prompts.length; i++) {
        assertThat(cache.replay(prompts[i])).isEqualTo(longestEarlierPrefix(prompts, i));
      }
    }
  }

  @Test
  void boundedReplaysKeepEveryInvariantAfterEveryRequest(Random random) {
    for (int round = 0; round < 20; round++) {
      int pageSize = List.of(1, 2, 4, 16).get(random.nextInt(4));
      long capacity = 64 + random.nextInt(400);
      int[][] prompts = randomPrompts(random, 200, 3 + random.nextInt(6));
      ReferenceRadixCache cache = new ReferenceRadixCache(pageSize, capacity);

      for (int i = 0; i < prompts.length; i++) {
        long hit = cache.replay(prompts[i]);
        assertIdle(cache, capacity);
        assertThat(hit % pageSize).isZero();
        assertThat(hit).isLessThanOrEqualTo(longestEarlierPrefix(prompts, i));
      }
      cache.reset();
      assertIdle(cache, capacity);
      assertThat(cache.treeTokens()).isZero();
    }
  }

  /** Prompts of at most 60 tokens over a tiny vocabulary, many extending an earlier prompt. */
  private static int[][] randomPrompts(Random random, int count, int vocab) {
    List<int[]> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      boolean fresh = out.isEmpty() || random.nextInt(3) == 0;
      int[] base = fresh ? new int[0] : out.get(random.nextInt(out.size()));
      int keep = base.length == 0 ? 0 : random.nextInt(base.length + 1);
      int[] p = Arrays.copyOf(base, Math.min(60, keep + 1 + random.nextInt(20)));
      for (int k = keep; k < p.length; k++) {
        p[k] = random.nextInt(vocab);
      }
      out.add(p);
    }
    return out.toArray(int[][]::new);
  }

  private static long longestEarlierPrefix(int[][] prompts, int i) {
    long best = 0;
    for (int j = 0; j < i; j++) {
      int m = Arrays.mismatch(prompts[i], prompts[j]);
      best = Math.max(best, m < 0 ? prompts[i].length : m);
    }
    return best;
  }
}
