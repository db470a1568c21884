package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The candidate order against a model that keeps each node's latest key: pushes that carry the
 * newest key (which go to the sorted run) mixed with pushes of old keys (which go to the heap),
 * re-pushes that leave stale entries behind, deleted nodes, and compactions.
 */
class EvictionHeapTest {

  @Test
  void pollsFollowTheLatestKeysInPolicyOrder() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (EvictionPolicy policy : EvictionPolicy.values()) {
            for (int round = 0; round < TestSeeds.scaled(20); round++) {
              checkRound(policy, rnd);
            }
          }
        });
  }

  private static void checkRound(EvictionPolicy policy, Random rnd) {
    EvictionHeap heap = new EvictionHeap(policy, false);
    List<RadixNode> nodes = new ArrayList<>();
    for (int i = 0; i < 1 + rnd.nextInt(40); i++) {
      nodes.add(new RadixNode(i, 0));
    }
    Comparator<RadixNode> order =
        Comparator.comparingLong((RadixNode n) -> EvictionHeap.primaryKey(policy, n))
            .thenComparingLong(n -> EvictionHeap.secondaryKey(policy, n))
            .thenComparingLong(n -> n.id);
    // the model: each node with a live entry, and the key it was pushed with
    Map<RadixNode, long[]> live = new HashMap<>();
    long clock = 0;
    for (int op = 0; op < 400; op++) {
      int kind = rnd.nextInt(10);
      if (kind < 6) {
        RadixNode n = nodes.get(rnd.nextInt(nodes.size()));
        if (n.deleted) {
          continue;
        }
        // mostly the newest time, as a touch gives; sometimes an old one, as a parent keeps
        clock++;
        n.lastAccess = rnd.nextInt(4) > 0 ? clock : rnd.nextLong(clock);
        n.created = rnd.nextInt(4) > 0 ? clock : rnd.nextLong(clock);
        n.hitCount = rnd.nextInt(4);
        n.priority = rnd.nextInt(3);
        heap.push(n, live.size() / 4);
        live.put(n, new long[] {n.lastAccess, n.created, n.hitCount, n.priority});
      } else if (kind < 7 && !live.isEmpty()) {
        RadixNode n = List.copyOf(live.keySet()).get(rnd.nextInt(live.size()));
        n.deleted = true;
        live.remove(n);
      } else if (heap.size() > 0) {
        RadixNode polled = null;
        while (polled == null && heap.size() > 0) {
          polled = heap.pollLive();
        }
        RadixNode expected = live.keySet().stream().min(order).orElse(null);
        assertThat(polled).as("%s after %d operations", policy, op).isSameAs(expected);
        live.remove(polled);
      }
      assertThat(heap.liveNodes()).containsExactlyInAnyOrderElementsOf(live.keySet());
    }
  }
}
