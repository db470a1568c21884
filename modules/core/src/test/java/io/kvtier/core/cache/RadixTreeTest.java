package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Match, insert, split, namespaces and page alignment, in allocator-only mode. */
class RadixTreeTest {

  static int[] range(int from, int to) {
    return IntStream.range(from, to).toArray();
  }

  static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** Admits, allocates what is missing and finishes; returns the already-cached length. */
  static int serve(RankCache cache, long id, int[] tokens) {
    cache.admit(id, tokens, RequestOptions.DEFAULT);
    cache.allocateTokens(id, tokens.length);
    int cached = cache.finish(id);
    CacheInvariants.check(cache);
    return cached;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 16})
  void secondRequestHitsTheFirstOnesPrefix(int pageSize) {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(pageSize, 64, 0));
    int[] a = range(100, 100 + 4 * pageSize);
    assertThat(serve(cache, 1, a)).isZero();
    Admission second = cache.admit(2, a);
    assertThat(second.devicePrefixLength()).isEqualTo(4 * pageSize);
    assertThat(cache.pageTable(2)).hasSize(4);
    assertThat(second.hostHitLength()).isZero();
    assertThat(cache.finish(2)).isEqualTo(4 * pageSize);
    CacheInvariants.checkIdle(cache);
    assertThat(cache.deviceUsage().evictable()).isEqualTo(4);
  }

  @Test
  void matchSplitsAtPageBoundaryAndOldNodeKeepsItsIdAndSuffix() {
    int pageSize = 16;
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(pageSize, 64, 0));
    int[] a = range(0, 48);
    serve(cache, 1, a);
    RadixNode whole = cache.match(0, a).lastDeviceNode();
    long id = whole.id();
    int[] slots = whole.deviceSlots();
    // Diverges inside the third page: only two whole pages match.
    int[] b = a.clone();
    b[40] = 999;
    MatchResult m = cache.match(0, b);
    assertThat(m.deviceLength()).isEqualTo(32);
    RadixNode top = m.lastDeviceNode();
    assertThat(top.id()).isNotEqualTo(id);
    assertThat(top.tokens()).containsExactly(range(0, 32));
    assertThat(whole.id()).isEqualTo(id);
    assertThat(whole.tokens()).containsExactly(range(32, 48));
    assertThat(whole.prefixLength()).isEqualTo(48);
    assertThat(concat(top.deviceSlots(), whole.deviceSlots())).containsExactly(slots);
    assertThat(m.deviceSlots()).containsExactly(top.deviceSlots());
    assertThat(cache.nodeCount()).isEqualTo(2);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void theInsertReusesTheAdmissionsPageKeyOnlyForTheAdmittedArray() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(4, 64, 0));
    serve(cache, 1, new int[] {1, 2, 3, 4, 9, 9, 9, 9});
    serve(cache, 2, new int[] {1, 2, 3, 4, 8, 8, 8, 8});
    // The admission's walk looks up the page [5, 6, 7, 8] below [1, 2, 3, 4] and misses; the
    // request then finishes with another array whose page there is [6, 6, 6, 6], whose key the
    // insert must compute (the invariant checker compares every child's key with its page).
    cache.admit(3, new int[] {1, 2, 3, 4, 5, 6, 7, 8});
    cache.allocateTokens(3, 8);
    assertThat(cache.finish(3, new int[] {1, 2, 3, 4, 6, 6, 6, 6})).isEqualTo(4);
    CacheInvariants.check(cache);
    assertThat(cache.match(0, new int[] {1, 2, 3, 4, 6, 6, 6, 6}).deviceLength()).isEqualTo(8);
    // With the admitted array the insert takes the admission's key: the same tree results.
    assertThat(serve(cache, 4, new int[] {1, 2, 3, 4, 5, 6, 7, 8})).isEqualTo(4);
    assertThat(cache.match(0, new int[] {1, 2, 3, 4, 5, 6, 7, 8}).deviceLength()).isEqualTo(8);
  }

  @Test
  void theTreeKeepsTheTokensAsAdmitted() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(4, 64, 0));
    serve(cache, 1, range(0, 8));
    int[] a = range(0, 16);
    int[] admitted = a.clone();
    cache.admit(2, a);
    // The admission checked and copied the tokens past the match; a change to the array after
    // that (against the contract; here to ids outside the vocabulary, in the new leaf's first
    // page and in its second) must not reach the tree unchecked, and the leaf must sit under the
    // key of the tokens it keeps (the invariant checker looks it up by its first page).
    a[8] = -5;
    a[12] = -5;
    cache.allocateTokens(2, 16);
    assertThat(cache.finish(2)).isEqualTo(8);
    CacheInvariants.checkIdle(cache);
    assertThat(cache.match(0, admitted).deviceLength()).isEqualTo(16);
    // A prompt past the match too long for the key store's chunks is checked, not copied at
    // admission, and its insert gives the key an array of its own, as before.
    int[] longPrompt = range(0, 8200);
    assertThat(serve(cache, 3, java.util.Arrays.copyOf(longPrompt, 256))).isEqualTo(16);
    RankCache big = RankCache.withoutMemory(CacheConfig.of(4, 4096, 0));
    assertThat(serve(big, 1, longPrompt)).isZero();
    assertThat(serve(big, 2, longPrompt)).isEqualTo(8200);
    CacheInvariants.checkIdle(big);
    CacheTree bigTree = big.rooms().tree();
    RadixNode leaf = bigTree.findChild(bigTree.rootFor(0, false), longPrompt, 0);
    assertThat(leaf.keyLength).isEqualTo(8200);
    assertThat(leaf.keyChunk).as("a key of its own, not a chunk's").isEqualTo(-1);
  }

  @Test
  void divergenceInsideFirstPageIsAMiss() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(16, 64, 0));
    int[] a = range(0, 32);
    serve(cache, 1, a);
    int[] b = a.clone();
    b[15] = 7777;
    assertThat(cache.match(0, b).deviceLength()).isZero();
    assertThat(serve(cache, 2, b)).isZero();
    assertThat(cache.nodeCount()).isEqualTo(2);
    CacheInvariants.checkIdle(cache);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 16})
  void unalignedTailIsNotCachedAndItsPageIsFreed(int pageSize) {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(pageSize, 64, 0));
    int[] a = range(5, 5 + 3 * pageSize + (pageSize == 1 ? 0 : 5));
    cache.admit(1, a);
    int[] pages = cache.allocateTokens(1, a.length);
    assertThat(pages).hasSize(pageSize == 1 ? a.length : 4);
    cache.finish(1);
    assertThat(cache.match(0, a).deviceLength()).isEqualTo(3 * pageSize);
    assertThat(cache.deviceUsage().free()).isEqualTo(64 - 3);
    CacheInvariants.checkIdle(cache);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 16})
  void growToAllocatesWhatAllocateTokensWouldAndLeavesTheSlotsInThePageTable(int pageSize) {
    RankCache counted = RankCache.withoutMemory(CacheConfig.of(pageSize, 64, 0));
    RankCache copied = RankCache.withoutMemory(CacheConfig.of(pageSize, 64, 0));
    int[] a = range(7, 7 + 5 * pageSize);
    int[] b = concat(java.util.Arrays.copyOf(a, 2 * pageSize), range(500, 500 + 3 * pageSize));
    for (RankCache cache : new RankCache[] {counted, copied}) {
      serve(cache, 1, a);
      cache.admit(2, b);
    }

    assertThat(counted.growTo(2, b.length)).isEqualTo(3);
    int[] added = copied.allocateTokens(2, b.length);
    assertThat(counted.growTo(2, b.length)).as("nothing missing any more").isZero();
    assertThat(counted.pageTable(2)).containsExactly(copied.pageTable(2));
    int[] row = new int[6];
    assertThat(counted.copyPageTable(2, row, 1)).isEqualTo(5);
    assertThat(java.util.Arrays.copyOfRange(row, 3, 6)).containsExactly(added);
    counted.finish(2);
    copied.finish(2);
    assertThat(counted.replicaDigest()).isEqualTo(copied.replicaDigest());
    CacheInvariants.checkIdle(counted);
  }

  @Test
  void concurrentDuplicatesAreFreedAndInsertReturnsTheCachedLength() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, 64, 0));
    int[] a = range(0, 10);
    cache.admit(1, a);
    cache.admit(2, a);
    cache.allocateTokens(1, 10);
    cache.allocateTokens(2, 10);
    assertThat(cache.deviceUsage().free()).isEqualTo(44);
    assertThat(cache.finish(1)).isZero();
    assertThat(cache.finish(2)).isEqualTo(10);
    assertThat(cache.deviceUsage().free()).isEqualTo(54);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void namespacesNeverShareNodes() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, 64, 0));
    int[] a = range(0, 8);
    serve(cache, 1, a);
    RequestOptions lora = RequestOptions.DEFAULT.withNamespace(42);
    Admission other = cache.admit(2, a, lora);
    assertThat(other.devicePrefixLength()).isZero();
    cache.allocateTokens(2, 8);
    assertThat(cache.finish(2)).isZero();
    assertThat(cache.nodeCount()).isEqualTo(2);
    assertThat(cache.match(42, a).lastDeviceNode().namespace()).isEqualTo(42);
    assertThat(cache.match(0, a).lastDeviceNode().namespace()).isZero();
    assertThat(cache.deviceUsage().used()).isEqualTo(16);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void chunkedPrefillKeepsItsLockAndTheTreeSlotsReplaceDuplicates() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(4, 64, 0));
    int[] shared = range(0, 8);
    serve(cache, 1, shared);
    int[] a = concat(shared, range(100, 120));
    cache.admit(2, a);
    // A concurrent request caches the first chunk's tokens before request 2 does.
    cache.admit(3, a);
    cache.allocateTokens(3, 16);
    cache.allocateTokens(2, 16);
    cache.cacheChunk(3, 16);
    int[] table = cache.cacheChunk(2, 16);
    assertThat(table).containsExactly(cache.match(0, java.util.Arrays.copyOf(a, 16)).deviceSlots());
    assertThat(cache.deviceUsage().evictable()).isZero();
    cache.allocateTokens(2, a.length);
    cache.finish(2);
    cache.abort(3);
    assertThat(cache.match(0, a).deviceLength()).isEqualTo(28);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void abortReleasesEverythingAndCachesNothing() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, 32, 0));
    int[] a = range(0, 10);
    serve(cache, 1, a);
    cache.admit(2, concat(a, range(50, 60)));
    cache.allocate(2, 10);
    cache.abort(2);
    assertThat(cache.deviceUsage().free()).isEqualTo(22);
    assertThat(cache.match(0, concat(a, range(50, 60))).deviceLength()).isEqualTo(10);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void finishWithDecodedTokensCachesThemToo() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(2, 32, 0));
    int[] prompt = range(0, 6);
    int[] all = concat(prompt, range(70, 75));
    cache.admit(1, prompt);
    cache.allocateTokens(1, all.length);
    assertThat(cache.finish(1, all)).isZero();
    assertThat(cache.match(0, all).deviceLength()).isEqualTo(10);
    CacheInvariants.checkIdle(cache);
  }

  @Test
  void sameCallsGiveSameSlots() {
    RankCache one = RankCache.withoutMemory(CacheConfig.of(1, 40, 0));
    RankCache two = RankCache.withoutMemory(CacheConfig.of(1, 40, 0));
    for (RankCache c : new RankCache[] {one, two}) {
      serve(c, 1, range(0, 12));
      serve(c, 2, concat(range(0, 5), range(30, 40)));
      c.admit(3, range(0, 3));
    }
    assertThat(one.match(0, range(0, 12)).deviceSlots())
        .containsExactly(two.match(0, range(0, 12)).deviceSlots());
    assertThat(one.allocate(3, 7)).containsExactly(two.allocate(3, 7));
  }

  @Test
  void fullEmptyRootOfASaltedNamespaceIsDropped() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(1, 8, 0));
    serve(cache, 1, range(0, 8));
    RequestOptions salted = RequestOptions.DEFAULT.withNamespace(9);
    cache.admit(2, range(0, 8), salted);
    cache.allocate(2, 8);
    cache.finish(2);
    // Namespace 0's pages were evicted to make room; namespace 9 holds the pool now.
    assertThat(cache.match(0, range(0, 8)).deviceLength()).isZero();
    cache.admit(3, range(20, 28));
    cache.allocate(3, 8);
    cache.finish(3);
    assertThat(cache.rooms().tree().roots.get(9)).isNull();
    assertThat(cache.match(123, range(0, 8)).deviceLength()).isZero();
    assertThat(cache.rooms().tree().roots.get(123)).isNull();
    CacheInvariants.checkIdle(cache);
  }
}
