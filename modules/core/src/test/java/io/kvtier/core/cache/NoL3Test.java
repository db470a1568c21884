package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import java.util.BitSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A cache without an L3 tier: its L3 port answers "nothing there", takes only empty commits. */
class NoL3Test {
  private RankCache cache;

  @BeforeEach
  void setUp() {
    cache = RankCache.withoutMemory(CacheConfig.of(4, 32, 0));
  }

  @Test
  void answersNothingThere() {
    assertThat(cache.hasL3()).isFalse();
    assertThat(cache.l3Config()).isEmpty();
    assertThat(cache.l3Stats()).isEqualTo(L3Stats.NONE);
    assertThat(cache.pendingL3Writes()).isZero();
    assertThat(cache.pendingPrefetches()).isZero();
    assertThat(cache.commits().readyL3WritePrefix()).isZero();
    assertThat(cache.commits().localL3WriteFailures(0)).isEqualTo(new BitSet());
    assertThat(cache.prefetchState(1)).isEqualTo(RankCache.PrefetchState.NONE);
    assertThat(cache.admittedPrefetch(1)).isEmpty();
    assertThat(cache.rooms().l3()).isEmpty();
  }

  @Test
  void startPrefetchTouchesNothing() {
    cache.admit(1, new int[] {1, 2, 3, 4, 5, 6, 7, 8});
    cache.allocateTokens(1, 8);
    cache.finish(1);
    long clock = cache.logicalClock();
    long digest = cache.replicaDigest();

    assertThat(cache.startPrefetch(2, new int[] {1, 2, 3, 4, 9, 9, 9, 9}, RequestOptions.DEFAULT))
        .isFalse();

    assertThat(cache.logicalClock()).isEqualTo(clock);
    assertThat(cache.replicaDigest()).isEqualTo(digest);
  }

  @Test
  void emptyCommitsAreAccepted() {
    cache.commits().commitL3Writes(0, new BitSet());
    cache.commits().commitPrefetches(new long[0], 0, 0);
    cache.commits().localPrefetchProgress(new long[0], 0);
    cache.cancelPrefetch(1);
    assertThat(cache.sync()).isZero();
  }

  @Test
  void nonEmptyCommitsFailNamingTheMissingTier() {
    assertThatThrownBy(() -> cache.commits().commitL3Writes(1, new BitSet()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("cannot commit 1 L3 writes: no L3 tier");
    assertThatThrownBy(() -> cache.commits().commitPrefetches(new long[3], 0, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("cannot commit 1 prefetches: no L3 tier");
  }
}
