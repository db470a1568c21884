package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.WritePolicy;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One rank of an L3 test: a cache over hand-written fake pools, a fake store and a manual
 * executor, with its own clock; and {@link #sync(L3Rank...)}, the fused MIN of the rank
 * protocol done by hand across ranks.
 */
final class L3Rank {
  static final int PAGE = 4;

  final int rank;
  final FakeKvMemory memory;
  final FakeKvStore store;
  final ManualL3Executor executor = new ManualL3Executor();
  final AtomicLong clock = new AtomicLong();
  final KvPattern pattern;
  final RankCache cache;
  final byte[] salt;

  L3Rank(int rank, int worldSize, FakeKvStore store, L3Config l3, int devicePages, int hostPages) {
    this(rank, worldSize, store, l3, devicePages, hostPages, CacheEventListener.NONE);
  }

  /** A rank whose cache reports its KV events to {@code listener}. */
  L3Rank(
      int rank,
      int worldSize,
      FakeKvStore store,
      L3Config l3,
      int devicePages,
      int hostPages,
      CacheEventListener listener) {
    this.rank = rank;
    this.store = store;
    this.memory = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), devicePages, hostPages);
    this.pattern = new KvPattern(memory.layout);
    CacheConfig config =
        CacheConfig.of(PAGE, devicePages, hostPages)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withEvictionPolicy(EvictionPolicy.LRU);
    this.cache =
        RankCache.builder(config)
            .device(memory.device)
            .host(memory.host, memory.engine)
            .l3(new L3Setup(l3, store, executor, clock::get, rank, worldSize))
            .events(listener)
            .build();
    this.salt = L3Keys.salt(l3.modelId(), rank, worldSize, l3.replicatedKv());
  }

  /** Admits without load-back, computes the KV pattern, finishes; host copies complete. */
  void serve(long id, int[] tokens) {
    cache.admit(id, tokens, RequestOptions.DEFAULT.withLoadBackQuota(0));
    cache.allocateTokens(id, tokens.length);
    RequestState r = cache.rooms().requests().get(id);
    long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
    for (int i = 0; i < r.ownCount(); i++) {
      pattern.write(memory.device, r.own.slot(i), hashes, r.prefixLength / PAGE + i);
    }
    cache.finish(id);
    memory.engine.completeAll();
    CacheInvariants.check(cache);
  }

  /** The L3 key this rank uses for page {@code page} of {@code tokens}. */
  io.kvtier.spi.PageKey key(int[] tokens, int page) {
    int[] prefix = java.util.Arrays.copyOf(tokens, (page + 1) * PAGE);
    byte[] hash = PageHasher.pageKeys(0, prefix, PAGE).get(page).toBytes();
    return L3Keys.key(salt, hash);
  }

  /**
   * One sync step of every rank, as {@code CommitSync} does it: the same array shape from
   * replicated counts, MIN-reduced across the ranks, then the commits with the agreed values.
   */
  static void sync(L3Rank... ranks) {
    RankCache first = ranks[0].cache;
    if (first.outstandingOperations() == 0) {
      return;
    }
    int writes = first.pendingWrites();
    int loads = first.pendingLoads();
    int l3Writes = first.pendingL3Writes();
    int prefetches = first.pendingPrefetches();
    int width = 3 + writes + loads + l3Writes + RankCache.PREFETCH_SYNC_WIDTH * prefetches;
    long[] agreed = null;
    for (L3Rank r : ranks) {
      RankCache c = r.cache;
      if (c.pendingWrites() != writes
          || c.pendingL3Writes() != l3Writes
          || c.pendingPrefetches() != prefetches
          || c.pendingLoads() != loads) {
        throw new AssertionError("ranks disagree on the replicated counts");
      }
      long[] v = new long[width];
      v[0] = c.readyWritePrefix();
      v[1] = c.readyLoadPrefix();
      v[2] = c.readyL3WritePrefix();
      flags(c.localWriteFailures((int) v[0]), v, 3);
      flags(c.localLoadFailures((int) v[1]), v, 3 + writes);
      flags(c.localL3WriteFailures((int) v[2]), v, 3 + writes + loads);
      c.localPrefetchProgress(v, 3 + writes + loads + l3Writes);
      if (agreed == null) {
        agreed = v;
      } else {
        for (int i = 0; i < width; i++) {
          agreed[i] = Math.min(agreed[i], v[i]);
        }
      }
    }
    for (L3Rank r : ranks) {
      RankCache c = r.cache;
      c.commitLoads((int) agreed[1], failed(agreed, 3 + writes, (int) agreed[1]));
      c.commitWrites((int) agreed[0], failed(agreed, 3, (int) agreed[0]));
      c.commitL3Writes((int) agreed[2], failed(agreed, 3 + writes + loads, (int) agreed[2]));
      c.commitPrefetches(agreed, 3 + writes + loads + l3Writes, prefetches);
      CacheInvariants.check(c);
    }
    long digest = ranks[0].cache.replicaDigest();
    for (L3Rank r : ranks) {
      if (r.cache.replicaDigest() != digest) {
        throw new AssertionError("rank " + r.rank + " diverged after the sync");
      }
    }
  }

  private static void flags(BitSet failed, long[] into, int offset) {
    for (int i = failed.nextSetBit(0); i >= 0; i = failed.nextSetBit(i + 1)) {
      into[offset + i] = -1;
    }
  }

  private static BitSet failed(long[] agreed, int offset, int count) {
    BitSet b = new BitSet();
    for (int i = 0; i < count; i++) {
      if (agreed[offset + i] < 0) {
        b.set(i);
      }
    }
    return b;
  }
}
