package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Bad input fails with a clear exception, changes nothing and leaks nothing. */
class BadInputTest {
  private RankCache cache;

  @BeforeEach
  void setUp() {
    cache = RankCache.withoutMemory(CacheConfig.of(4, 32, 0).withVocabSize(1000));
    cache.admit(1, new int[] {1, 2, 3, 4, 5, 6, 7, 8});
    cache.allocate(1, 2);
    cache.finish(1);
  }

  private void assertUnchangedAndIdle(String before) {
    assertThat(CacheProbe.digest(cache)).isEqualTo(before);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void negativeOrTooLargeTokenIds() {
    String before = CacheProbe.digest(cache);
    assertThatThrownBy(() -> cache.admit(2, new int[] {1, 2, -3, 4}))
        .isInstanceOf(InvalidTokenException.class)
        .hasMessageContaining("token id -3 at index 2 is out of range [0, 1000)");
    assertThatThrownBy(() -> cache.admit(2, new int[] {1, 2, 3, 1000}))
        .isInstanceOf(InvalidTokenException.class)
        .hasMessageContaining("token id 1000 at index 3");
    assertThatThrownBy(() -> cache.match(0, new int[] {Integer.MIN_VALUE}))
        .isInstanceOf(InvalidTokenException.class);
    assertThat(cache.isActive(2)).isFalse();
    assertUnchangedAndIdle(before);
  }

  @Test
  void aBadTokenPastACachedPrefixChangesNothing() {
    // The first page matches the cached node [1..8] in part: a good request would split it and
    // stamp the path, a rejected one must do neither (the tokens are checked past the match,
    // before the walk's changes), and must not leave the root of a new namespace behind.
    String before = CacheProbe.digest(cache);
    long nodes = cache.nodeCount();
    assertThatThrownBy(() -> cache.admit(2, new int[] {1, 2, 3, 4, 5, 6, 7, 9, 1000}))
        .isInstanceOf(InvalidTokenException.class)
        .hasMessageContaining("token id 1000 at index 8");
    assertThatThrownBy(() -> cache.match(0, new int[] {1, 2, 3, 4, 5, 6, 7, 8, 0, -1}))
        .isInstanceOf(InvalidTokenException.class)
        .hasMessageContaining("token id -1 at index 9");
    assertThatThrownBy(
            () -> cache.admit(3, new int[] {1, -2}, RequestOptions.DEFAULT.withNamespace(7)))
        .isInstanceOf(InvalidTokenException.class);
    assertThat(cache.nodeCount()).isEqualTo(nodes);
    assertThat(cache.isActive(2)).isFalse();
    assertThat(cache.isActive(3)).isFalse();
    assertUnchangedAndIdle(before);
    // The same prompt without the bad token does split the node: the check above is not vacuous.
    cache.match(0, new int[] {1, 2, 3, 4, 5, 6, 7, 9});
    assertThat(cache.nodeCount()).isEqualTo(nodes + 1);
  }

  @Test
  void finishOfUnknownOrAlreadyFinishedRequest() {
    String before = CacheProbe.digest(cache);
    assertThatThrownBy(() -> cache.finish(77))
        .isInstanceOf(UnknownRequestException.class)
        .hasMessageContaining("finish of request id=77");
    assertThatThrownBy(() -> cache.finish(1))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("id=1")
        .hasMessageContaining("already finished");
    assertThatThrownBy(() -> cache.abort(1)).isInstanceOf(UnknownRequestException.class);
    assertThatThrownBy(() -> cache.allocate(1, 1)).isInstanceOf(UnknownRequestException.class);
    assertUnchangedAndIdle(before);
  }

  @Test
  void doubleUnlockAndForeignLocks() {
    RadixNode n = cache.match(0, new int[] {1, 2, 3, 4, 5, 6, 7, 8}).lastDeviceNode();
    CacheLock lock = cache.lock(n);
    assertThat(cache.deviceUsage().evictable()).isZero();
    cache.unlock(lock);
    String before = CacheProbe.digest(cache);
    assertThatThrownBy(() -> cache.unlock(lock))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already released");
    RankCache other = RankCache.withoutMemory(CacheConfig.of(4, 32, 0));
    assertThatThrownBy(() -> other.lock(n))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not in this cache's tree");
    assertUnchangedAndIdle(before);
  }

  @Test
  void misalignedKeysWhereWholePagesAreRequired() {
    assertThatThrownBy(() -> cache.pageKeys(0, new int[] {1, 2, 3, 4, 5}))
        .isInstanceOf(MisalignedKeyException.class)
        .hasMessageContaining("tokens.length=5 is not a multiple of pageSize=4");
    assertThat(cache.pageKeys(0, new int[] {1, 2, 3, 4})).hasSize(1);
  }

  @Test
  void requestMisuse() {
    String before = CacheProbe.digest(cache);
    cache.admit(2, new int[] {1, 2, 3, 4, 9});
    assertThatThrownBy(() -> cache.admit(2, new int[] {1}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already active");
    assertThatThrownBy(() -> cache.allocate(2, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pages=-1");
    assertThatThrownBy(() -> cache.finish(2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("holds pages for only 4 tokens");
    cache.allocate(2, 1);
    assertThatThrownBy(() -> cache.finish(2, new int[] {1, 2, 3, 5, 9}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("differ from the admitted prompt at index 3");
    assertThatThrownBy(() -> cache.finish(2, new int[] {1, 2}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shorter");
    assertThatThrownBy(() -> cache.commits().commitWrites(1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("0 are pending");
    assertThatThrownBy(() -> cache.copyPageTable(2, new int[0], 0))
        .isInstanceOf(IndexOutOfBoundsException.class);
    cache.abort(2);
    assertThat(cache.deviceUsage().free()).isEqualTo(30);
    CacheInvariants.checkIdle(cache);
    assertThat(cache.nodeCount()).isEqualTo(CacheProbe.nodes(cache).size());
    assertThat(before).isNotNull();
  }

  @Test
  void poolExhaustionAllocatesNothing() {
    cache.admit(2, new int[] {9, 9});
    cache.allocate(2, 30);
    assertThatThrownBy(() -> cache.allocate(2, 3))
        .isInstanceOf(PoolExhaustedException.class)
        .hasMessageContaining("requested 3 pages, 2 free");
    assertThat(cache.deviceUsage().free()).isEqualTo(2);
    cache.abort(2);
    CacheInvariants.checkIdle(cache);
    assertThat(cache.deviceUsage().free()).isEqualTo(32);
  }

  @Test
  void configurationMistakes() {
    assertThatThrownBy(() -> RankCache.withoutMemory(CacheConfig.of(1, 8, 4)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hostPages=4");
    FakeKvMemory m = new FakeKvMemory(FakeKvMemory.smallLayout(2), 8, 0);
    assertThatThrownBy(() -> RankCache.withMemory(CacheConfig.of(2, 9, 0), m.device))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("8 pages");
    assertThatThrownBy(() -> RankCache.withMemory(CacheConfig.of(4, 8, 0), m.device))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pageSize=2");
  }
}
