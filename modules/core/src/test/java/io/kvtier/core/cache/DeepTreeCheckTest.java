package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The invariant checks over a tree as deep as a long prompt is pages (a snapshot at every page
 * splits an insert at every page): they walk it with a stack of their own. Recursing, they
 * overflowed the thread's stack (kvtier replay of the Mooncake trace at 16-token pages with a
 * snapshot every page); here on a thread of 128 KiB of stack, which a recursion over a chain of
 * 4,000 nodes overflows.
 */
class DeepTreeCheckTest {
  private static final int DEPTH = 4000;

  @Test
  void theChecksWalkAChainOfThousandsOfNodesOnASmallStack() throws Exception {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, DEPTH + 64, 0));
    int[] tokens = new int[DEPTH];
    Arrays.setAll(tokens, i -> i % 1000);
    // Each request resends the last one's tokens and one more: one new leaf under the last.
    for (int n = 1; n <= DEPTH; n++) {
      int[] prompt = Arrays.copyOf(tokens, n);
      cache.admit(n, prompt);
      cache.allocateTokens(n, n);
      cache.finish(n);
    }
    assertThat(cache.nodeCount()).as("nodes of the chain").isEqualTo(DEPTH);

    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread small =
        new Thread(
            null,
            () -> {
              try {
                CacheInvariants.check(cache);
                CacheInvariants.checkIdle(cache);
              } catch (Throwable t) {
                failed.set(t);
              }
            },
            "deep-tree-check",
            128 * 1024);
    small.start();
    small.join();
    assertThat(failed.get()).as("the checks on a small stack").isNull();
  }
}
