package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The bulk storage of the request path: the page allocator's runs and bitmap, and the chunked key
 * store whose chunks are reused once their keys leave the tree.
 */
class HotPathStorageTest {

  @Test
  void allocatorHandsOutTheLowestFreeSlotsAndAgreesWithASortedSet() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (int round = 0; round < TestSeeds.scaled(40); round++) {
            // capacities around word boundaries, where the masks are easiest to get wrong, and now
            // and then one of several summary words, with runs of wholly free words
            boolean large = rnd.nextInt(4) == 0;
            int capacity = large ? 4000 + rnd.nextInt(6000) : 1 + rnd.nextInt(300);
            PageAllocator pool = new PageAllocator("device", capacity);
            TreeSet<Integer> free = new TreeSet<>();
            for (int s = 0; s < capacity; s++) {
              free.add(s);
            }
            List<int[]> held = new ArrayList<>();
            for (int op = 0; op < 400; op++) {
              if (held.isEmpty() || (rnd.nextBoolean() && !free.isEmpty())) {
                int n =
                    1
                        + rnd.nextInt(
                            Math.min(free.size(), rnd.nextBoolean() ? 4 : large ? 3000 : 130));
                int[] slots = new int[n + 2];
                pool.allocate(n, slots, 1);
                int[] expected = new int[n];
                for (int i = 0; i < n; i++) {
                  expected[i] = free.pollFirst();
                }
                assertThat(Arrays.copyOfRange(slots, 1, n + 1)).containsExactly(expected);
                held.add(expected);
              } else {
                int[] slots = held.remove(rnd.nextInt(held.size()));
                // release a random part first and the rest later, in a shuffled order or, for long
                // runs, in the order they were handed out
                if (rnd.nextBoolean()) {
                  shuffle(slots, rnd);
                }
                int part = rnd.nextInt(slots.length + 1);
                pool.release(slots, 0, part);
                if (part < slots.length) {
                  held.add(Arrays.copyOfRange(slots, part, slots.length));
                }
                for (int i = 0; i < part; i++) {
                  free.add(slots[i]);
                }
              }
              assertThat(pool.free()).isEqualTo(free.size());
              assertThat(pool.freeSlots())
                  .containsExactly(free.stream().mapToInt(i -> i).toArray());
            }
          }
        });
  }

  /**
   * An allocation into runs takes the slots an allocation into an array takes, any slice of the
   * runs describes that part of them, and a release by runs frees what a release by comparison
   * would; dropping pages from the front keeps the rest.
   */
  @Test
  void runsDescribeTheSlotsAndReleaseThem() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (int round = 0; round < TestSeeds.scaled(40); round++) {
            int capacity = 64 + rnd.nextInt(2000);
            PageAllocator byRuns = new PageAllocator("device", capacity);
            PageAllocator byCompare = new PageAllocator("device", capacity);
            // fragment both pools the same way
            int[] scratch = new int[capacity];
            byRuns.allocate(capacity, scratch, 0);
            byCompare.allocate(capacity, scratch.clone(), 0);
            for (int slot = 0; slot < capacity; slot++) {
              if (rnd.nextInt(3) == 0) {
                byRuns.release(new int[] {slot}, 0, 1);
                byCompare.release(new int[] {slot}, 0, 1);
              }
            }
            // two allocations into one list, as a request that grows
            SlotRuns runs = new SlotRuns();
            int n = 0;
            int[] slots = new int[0];
            for (int part = 0; part < 2 && byRuns.free() > 0; part++) {
              int more = 1 + rnd.nextInt(byRuns.free());
              byRuns.allocate(more, runs);
              slots = Arrays.copyOf(slots, n + more);
              byCompare.allocate(more, slots, n);
              n += more;
            }
            assertThat(runs.pages()).isEqualTo(n);
            assertThat(runs.toArray(0, n, byRuns)).containsExactly(slots);
            if (n == 0) {
              continue;
            }
            int from = rnd.nextInt(n);
            int pages = 1 + rnd.nextInt(n - from);
            int[] slice = runs.slice(from, pages);
            assertThat(SlotRuns.pages(slice)).isEqualTo(pages);
            assertThat(SlotRuns.toArray(slice))
                .containsExactly(Arrays.copyOfRange(slots, from, from + pages));
            for (int k = 0; k < slice.length; k += 2) {
              assertThat(slice[k + 1]).isPositive();
            }
            assertThat(runs.slot(from)).isEqualTo(slots[from]);
            runs.release(byRuns, from, pages);
            byCompare.release(slots, from, pages);
            assertThat(byRuns.freeSlots()).containsExactly(byCompare.freeSlots());
            int drop = rnd.nextInt(n + 1);
            runs.dropFront(drop);
            assertThat(runs.pages()).isEqualTo(n - drop);
            assertThat(runs.toArray(0, n - drop, null))
                .containsExactly(Arrays.copyOfRange(slots, drop, n));
          }
        });
  }

  @Test
  void aDoubleFreeInsideARunFailsAndLeavesTheRunAllocated() {
    PageAllocator pool = new PageAllocator("device", 200);
    int[] slots = new int[150];
    pool.allocate(150, slots, 0);
    pool.release(slots, 70, 1);

    // slots 60..99 form one run, but 70 is free already
    assertThatThrownBy(() -> pool.release(slots, 60, 40))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("device slot 70 released but not allocated");
    assertThat(pool.free()).isEqualTo(51);
    assertThat(pool.isAllocated(60)).isTrue();
    assertThat(pool.isAllocated(99)).isTrue();
    assertThatThrownBy(() -> pool.release(new int[] {200}, 0, 1))
        .hasMessageContaining("device slot 200 released but not allocated");
  }

  /**
   * Small pools, heavy eviction and chance splits make the key store reuse its chunks all the
   * time; after every request each node's key must still be the tokens of a prompt that was
   * admitted, from the root down (a reused chunk that still backed a live key would show here).
   */
  @Test
  void keysStayIntactWhileTheirChunksAreReused() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (int round = 0; round < TestSeeds.scaled(12); round++) {
            int pageSize = List.of(1, 2, 4).get(rnd.nextInt(3));
            int pages = 40 + rnd.nextInt(200);
            RankCache cache = RankCache.withoutMemory(CacheConfig.of(pageSize, pages, 0));
            List<int[]> prompts = new ArrayList<>();
            for (int request = 0; request < 300; request++) {
              int[] prompt = nextPrompt(rnd, prompts, pages * pageSize / 3);
              prompts.add(prompt);
              cache.admit(request, prompt);
              cache.allocateTokens(request, prompt.length);
              // the caller may reuse its array once the request ended: the tree keeps no view of it
              int[] reused = prompt.clone();
              cache.finish(request, reused);
              Arrays.fill(reused, -1);
              CacheInvariants.checkIdle(cache);
              for (RadixNode n : CacheProbe.nodes(cache)) {
                assertThat(isPrefixOfSome(pathTokens(n), prompts)).as("key of %s", n).isTrue();
              }
            }
            List<RadixNode> live = CacheProbe.nodes(cache);
            cache.evictDevice(Integer.MAX_VALUE);
            for (RadixNode n : live) {
              assertThat(n.isDeleted()).isTrue();
              assertThat(n.tokens()).isEmpty();
            }
            CacheInvariants.checkIdle(cache);
          }
        });
  }

  private static int[] nextPrompt(Random rnd, List<int[]> earlier, int maxLength) {
    int length = 1 + rnd.nextInt(Math.max(1, maxLength));
    int[] p = new int[length];
    int keep = 0;
    if (!earlier.isEmpty() && rnd.nextInt(3) > 0) {
      int[] base = earlier.get(rnd.nextInt(earlier.size()));
      keep = Math.min(length, rnd.nextInt(base.length + 1));
      System.arraycopy(base, 0, p, 0, keep);
    }
    for (int i = keep; i < length; i++) {
      // a small vocabulary makes chance matches and splits frequent
      p[i] = rnd.nextInt(6);
    }
    return p;
  }

  private static int[] pathTokens(RadixNode n) {
    List<RadixNode> path = new ArrayList<>();
    for (RadixNode x = n; !x.isRoot(); x = x.parent) {
      path.add(0, x);
    }
    int[] out = new int[n.prefixLength()];
    int pos = 0;
    for (RadixNode x : path) {
      int[] t = x.tokens();
      System.arraycopy(t, 0, out, pos, t.length);
      pos += t.length;
    }
    return out;
  }

  private static boolean isPrefixOfSome(int[] key, List<int[]> prompts) {
    for (int[] p : prompts) {
      if (p.length >= key.length && Arrays.mismatch(p, 0, key.length, key, 0, key.length) < 0) {
        return true;
      }
    }
    return false;
  }

  private static void shuffle(int[] a, Random rnd) {
    for (int i = a.length - 1; i > 0; i--) {
      int j = rnd.nextInt(i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}
