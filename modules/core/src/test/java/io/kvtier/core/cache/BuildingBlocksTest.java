package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.PageKey;
import io.kvtier.testkit.TestSeeds;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The open-addressing map, the page allocator and the page hashes. */
class BuildingBlocksTest {

  @Test
  void longMapAgreesWithHashMap() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (int round = 0; round < TestSeeds.scaled(50); round++) {
            LongMap<Long> map = new LongMap<>(1 + rnd.nextInt(8));
            Map<Long, Long> reference = new HashMap<>();
            int keySpace = 1 + rnd.nextInt(200);
            for (int op = 0; op < 2000; op++) {
              long key = rnd.nextInt(keySpace) * (rnd.nextBoolean() ? 1L : 0x100000001L);
              switch (rnd.nextInt(3)) {
                case 0 ->
                    assertThat(map.put(key, (long) op)).isEqualTo(reference.put(key, (long) op));
                case 1 -> assertThat(map.remove(key)).isEqualTo(reference.remove(key));
                default -> assertThat(map.get(key)).isEqualTo(reference.get(key));
              }
              assertThat(map.size()).isEqualTo(reference.size());
            }
            int seen = 0;
            for (int s = 0; s < map.slotCount(); s++) {
              if (map.valueAt(s) != null) {
                assertThat(reference.get(map.keyAt(s))).isEqualTo(map.valueAt(s));
                seen++;
              }
            }
            assertThat(seen).isEqualTo(reference.size());
          }
        });
  }

  @Test
  void allocatorIsDeterministicAndRejectsDoubleFree() {
    PageAllocator a = new PageAllocator("device", 8);
    int[] slots = new int[3];
    a.allocate(3, slots, 0);
    assertThat(slots).containsExactly(0, 1, 2);
    a.release(slots, 1, 1);
    assertThat(a.free()).isEqualTo(6);
    assertThatThrownBy(() -> a.release(slots, 1, 1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("device slot 1 released but not allocated");
    int[] again = new int[1];
    a.allocate(1, again, 0);
    assertThat(again).containsExactly(1);
    assertThatThrownBy(() -> a.allocate(9, new int[9], 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("only 5 are free");
  }

  private static byte[] sha(byte[] prior, int... tokens) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    if (prior != null) {
      md.update(prior);
    }
    ByteBuffer b = ByteBuffer.allocate(4 * tokens.length).order(ByteOrder.LITTLE_ENDIAN);
    for (int t : tokens) {
      b.putInt(t);
    }
    md.update(b.array());
    return md.digest();
  }

  @Test
  void pageHashesAreChainedAndSplitWithTheNode() throws Exception {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(2, 16, 0));
    int[] tokens = {1, 2, 3, 4, 5, 70000};
    cache.admit(1, tokens);
    cache.allocate(1, 3);
    cache.finish(1);
    RadixNode node = cache.match(0, tokens).lastDeviceNode();
    List<PageKey> keys = cache.pageKeys(node);
    byte[] h0 = sha(null, 1, 2);
    byte[] h1 = sha(h0, 3, 4);
    byte[] h2 = sha(h1, 5, 70000);
    assertThat(keys).containsExactly(PageKey.of(h0), PageKey.of(h1), PageKey.of(h2));
    assertThat(cache.pageKeys(0, tokens)).isEqualTo(keys);
    // A split divides the cached hashes; both halves still chain correctly.
    RadixNode top = cache.match(0, new int[] {1, 2, 3, 4, 9, 9}).lastDeviceNode();
    assertThat(cache.pageKeys(top)).containsExactly(PageKey.of(h0), PageKey.of(h1));
    assertThat(cache.pageKeys(node)).containsExactly(PageKey.of(h2));
    CacheInvariants.checkIdle(cache);
    // Namespaces never share keys.
    assertThat(cache.pageKeys(7, tokens)).doesNotContainAnyElementsOf(keys);
    byte[] seed =
        MessageDigest.getInstance("SHA-256")
            .digest(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(7).array());
    assertThat(cache.pageKeys(7, tokens).get(0)).isEqualTo(PageKey.of(sha(seed, 1, 2)));
  }

  @Test
  void pageHashCollisionsOfFirstPagesAreChained() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(2, 12, 0));
    cache.rooms().tree().pageKeyMask = 0;
    int[][] prompts = {{1, 2, 3, 4}, {5, 6, 7, 8}, {1, 2, 9, 9}, {5, 6, 7, 0}, {3, 3, 1, 1}};
    for (int i = 0; i < prompts.length; i++) {
      RadixTreeTest.serve(cache, i, prompts[i]);
    }
    RadixNode root = cache.rooms().tree().roots.get(0);
    assertThat(root.childCount).isEqualTo(3);
    assertThat(root.children.size()).isEqualTo(1);
    for (int[] p : prompts) {
      assertThat(cache.match(0, p).deviceLength()).isEqualTo(4);
    }
    assertThat(cache.match(0, new int[] {5, 7, 7, 8}).deviceLength()).isZero();
    CacheInvariants.checkIdle(cache);
    int used = cache.deviceUsage().used();
    assertThat(cache.evictDevice(12)).isEqualTo(used);
    assertThat(root.childCount).isZero();
    assertThat(root.children.isEmpty()).isTrue();
    CacheInvariants.checkIdle(cache);
  }
}
