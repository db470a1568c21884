package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link SubtreeWalk} visits a subtree in the order of the recursive walks it replaced (the
 * deletes below an untrusted node and the marking after a failed load are replicated decisions
 * that follow it), and walks a chain of thousands of nodes on a small stack.
 */
class SubtreeWalkTest {

  @Test
  void theOrderIsTheRecursiveWalksOnRandomTrees() {
    Random random = new Random(5);
    for (int round = 0; round < 20; round++) {
      RankCache cache = RankCache.withoutMemory(CacheConfig.of(2, 4096, 0));
      for (int id = 0; id < 60; id++) {
        int[] prompt = new int[2 * (1 + random.nextInt(12))];
        for (int i = 0; i < prompt.length; i++) {
          prompt[i] = random.nextInt(3);
        }
        cache.admit(id, prompt);
        cache.allocateTokens(id, prompt.length);
        cache.finish(id);
      }
      RadixNode root = cache.rooms().tree().rootFor(0, false);
      for (boolean withTop : new boolean[] {true, false}) {
        List<String> expected = new ArrayList<>();
        recursive(root, withTop, expected);
        List<String> walked = new ArrayList<>();
        SubtreeWalk.walk(
            root,
            withTop,
            new SubtreeWalk.Visitor() {
              @Override
              public void pre(RadixNode n) {
                walked.add("pre " + n.id);
              }

              @Override
              public void post(RadixNode n) {
                walked.add("post " + n.id);
              }
            });
        assertThat(walked).as("round %d, with top %s", round, withTop).isEqualTo(expected);
        assertThat(walked.size()).isGreaterThan(20);
      }
    }
  }

  /** The reference: the recursion the walk replaced. */
  private static void recursive(RadixNode n, boolean visit, List<String> out) {
    if (visit) {
      out.add("pre " + n.id);
    }
    if (n.children != null) {
      for (int s = 0; s < n.children.slotCount(); s++) {
        for (RadixNode c = n.children.valueAt(s); c != null; c = c.sameKeyNext) {
          recursive(c, true, out);
        }
      }
    }
    if (visit) {
      out.add("post " + n.id);
    }
  }

  @Test
  void aChainOfThousandsOfNodesWalksOnASmallStack() throws Exception {
    int depth = 4000;
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, depth + 64, 0));
    int[] tokens = new int[depth];
    Arrays.setAll(tokens, i -> i % 1000);
    for (int n = 1; n <= depth; n++) {
      cache.admit(n, Arrays.copyOf(tokens, n));
      cache.allocateTokens(n, n);
      cache.finish(n);
    }
    RadixNode root = cache.rooms().tree().rootFor(0, false);
    int[] visits = new int[2];
    Throwable[] failed = new Throwable[1];
    Thread small =
        new Thread(
            null,
            () -> {
              try {
                SubtreeWalk.walk(
                    root,
                    false,
                    new SubtreeWalk.Visitor() {
                      @Override
                      public void pre(RadixNode n) {
                        visits[0]++;
                      }

                      @Override
                      public void post(RadixNode n) {
                        visits[1]++;
                      }
                    });
              } catch (Throwable t) {
                failed[0] = t;
              }
            },
            "deep-walk",
            128 * 1024);
    small.start();
    small.join();
    assertThat(failed[0]).isNull();
    assertThat(visits).containsExactly(depth, depth);
  }
}
