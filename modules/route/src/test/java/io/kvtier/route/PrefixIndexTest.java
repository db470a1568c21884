package io.kvtier.route;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The index's prefix walk per replica and medium, and forgetting a replica. */
class PrefixIndexTest {
  @Test
  void theWalkStopsAtTheFirstBlockAReplicaLacks() {
    PrefixIndex index = new PrefixIndex(3);
    index.stored(0, "GPU", new long[] {1, 2, 3});
    index.stored(1, "GPU", new long[] {1});
    index.stored(1, "CPU", new long[] {2, 3, 4});
    index.stored(2, "GPU", new long[] {2, 3});
    int[][] m = index.match(new long[] {1, 2, 3, 4});
    assertThat(m[0]).containsExactly(3, 0);
    assertThat(m[1]).containsExactly(1, 3);
    assertThat(m[2]).as("no first block, no prefix").containsExactly(0, 0);
    index.removed(0, "GPU", new long[] {2});
    assertThat(index.match(new long[] {1, 2, 3})[0]).containsExactly(1, 0);
    index.clear(1);
    assertThat(index.match(new long[] {1, 2})[1]).containsExactly(0, 0);
    assertThat(index.size(1, PrefixIndex.CPU)).isZero();
    assertThat(index.size(0, PrefixIndex.GPU)).isEqualTo(2);
  }

  @Test
  void anL3BlockIsNoPrefixHit() {
    PrefixIndex index = new PrefixIndex(1);
    index.stored(0, "file", new long[] {1});
    assertThat(index.match(new long[] {1})[0]).containsExactly(0, 0);
    assertThat(index.size(0, PrefixIndex.OTHER)).isEqualTo(1);
  }

  @Test
  void aRoutedPromptCountsAsCachedUntilItsEventsComeOrItLapses() {
    PrefixIndex index = new PrefixIndex(2);
    long later = System.nanoTime() + 60_000_000_000L;
    index.routed(1, new long[] {1, 2, 3}, later);
    assertThat(index.match(new long[] {1, 2, 3, 4})[1]).containsExactly(3, 0);
    assertThat(index.predicted(1)).isEqualTo(3);
    // The events are the truth once they come: a block stored, then removed, is gone.
    index.stored(1, "GPU", new long[] {1, 2});
    index.removed(1, "GPU", new long[] {2});
    assertThat(index.predicted(1)).isEqualTo(1);
    assertThat(index.match(new long[] {1, 2, 3})[1]).containsExactly(1, 0);
    // A block the replica holds is not predicted again.
    index.routed(1, new long[] {1}, later);
    assertThat(index.predicted(1)).isEqualTo(1);
    index.routed(1, new long[] {5, 6}, later);
    index.unrouted(1, new long[] {5});
    assertThat(index.predicted(1)).as("3 and 6").isEqualTo(2);
    index.clear(1);
    assertThat(index.predicted(1)).isZero();
    // A lapsed prediction counts for nothing and is dropped at the next one.
    index.routed(0, new long[] {7}, System.nanoTime() - 1);
    assertThat(index.match(new long[] {7})[0]).containsExactly(0, 0);
    index.routed(0, new long[] {8}, later);
    assertThat(index.predicted(0)).isEqualTo(1);
  }
}
