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

  /**
   * A rank whose requests take recurrent-state snapshots of {@code snapshotSlots} slots every
   * {@code intervalPages} pages (HYBRID.md §5).
   */
  L3Rank(
      int rank,
      int worldSize,
      FakeKvStore store,
      L3Config l3,
      int devicePages,
      int hostPages,
      int snapshotSlots,
      int intervalPages) {
    this(
        rank,
        worldSize,
        store,
        l3,
        devicePages,
        hostPages,
        CacheEventListener.NONE,
        snapshotSlots,
        intervalPages);
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
    this(rank, worldSize, store, l3, devicePages, hostPages, listener, 0, 1);
  }

  private L3Rank(
      int rank,
      int worldSize,
      FakeKvStore store,
      L3Config l3,
      int devicePages,
      int hostPages,
      CacheEventListener listener,
      int snapshotSlots,
      int intervalPages) {
    this.rank = rank;
    this.store = store;
    this.memory = new FakeKvMemory(FakeKvMemory.smallLayout(PAGE), devicePages, hostPages);
    this.pattern = new KvPattern(memory.layout);
    CacheConfig config =
        CacheConfig.of(PAGE, devicePages, hostPages)
            .withWritePolicy(WritePolicy.WRITE_THROUGH)
            .withEvictionPolicy(EvictionPolicy.LRU);
    if (snapshotSlots > 0) {
      config = config.withSnapshots(snapshotSlots, intervalPages);
    }
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

  /**
   * As {@link #serve}, as a model with recurrent layers runs it: every snapshot the request's
   * one step takes ({@link RankCache#stepSnapshots}) gets the state pattern of its position.
   */
  void serveWithSnapshots(long id, int[] tokens) {
    cache.admit(id, tokens, RequestOptions.DEFAULT.withLoadBackQuota(0));
    cache.allocateTokens(id, tokens.length);
    RequestState r = cache.rooms().requests().get(id);
    long[] hashes = KvPattern.prefixHashes(0, tokens, tokens.length);
    for (int i = 0; i < r.ownCount(); i++) {
      pattern.write(memory.device, r.own.slot(i), hashes, r.prefixLength / PAGE + i);
    }
    for (SnapshotTarget s : cache.stepSnapshots(id, r.prefixLength, tokens.length)) {
      for (int i = 0; i < s.slots().length; i++) {
        writeState(memory.device, s.slots()[i], hashes, s.position(), i);
      }
    }
    cache.finish(id);
    memory.engine.completeAll();
    CacheInvariants.check(cache);
  }

  /** Writes the stand-in recurrent state of slot {@code i} of the snapshot at {@code end}. */
  void writeState(io.kvtier.spi.PageMemory memory, int slot, long[] hashes, int end, int i) {
    for (int layer = 0; layer < this.memory.layout.layers(); layer++) {
      memory.write(
          slot, layer, 0, java.lang.foreign.MemorySegment.ofArray(state(hashes, end, i, layer)));
    }
  }

  /** Whether {@code slot} holds slot {@code i} of the state at {@code end} in every layer. */
  boolean holdsState(io.kvtier.spi.PageMemory memory, int slot, long[] hashes, int end, int i) {
    for (int layer = 0; layer < this.memory.layout.layers(); layer++) {
      byte[] expected = state(hashes, end, i, layer);
      byte[] actual = new byte[expected.length];
      memory.read(slot, layer, 0, java.lang.foreign.MemorySegment.ofArray(actual));
      if (!java.util.Arrays.equals(actual, expected)) {
        return false;
      }
    }
    return true;
  }

  /** The bytes of one layer's block of the state: a function of the prefix, slot and layer. */
  private byte[] state(long[] hashes, int end, int i, int layer) {
    byte[] out = new byte[(int) memory.layout.pageBytesPerLayer()];
    long z = hashes[end - 1] ^ 0x5DEECE66DL * (i + 1) ^ (long) layer << 40;
    for (int b = 0; b < out.length; b++) {
      z = (z ^ (z >>> 31)) * 0x9E3779B97F4A7C15L + b;
      out[b] = (byte) (z >>> 56);
    }
    return out;
  }

  /** The L3 key of slot {@code slot} of the snapshot at the end of page {@code page}. */
  io.kvtier.spi.PageKey snapshotKey(int[] tokens, int page, int slot) {
    int[] prefix = java.util.Arrays.copyOf(tokens, (page + 1) * PAGE);
    byte[] hash = PageHasher.pageKeys(0, prefix, PAGE).get(page).toBytes();
    return L3Keys.snapshotKey(salt, hash, slot);
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
    int width = 3 + writes + loads + l3Writes + CommitPort.PREFETCH_SYNC_WIDTH * prefetches;
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
      v[0] = c.commits().readyWritePrefix();
      v[1] = c.commits().readyLoadPrefix();
      v[2] = c.commits().readyL3WritePrefix();
      flags(c.commits().localWriteFailures((int) v[0]), v, 3);
      flags(c.commits().localLoadFailures((int) v[1]), v, 3 + writes);
      flags(c.commits().localL3WriteFailures((int) v[2]), v, 3 + writes + loads);
      c.commits().localPrefetchProgress(v, 3 + writes + loads + l3Writes);
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
      c.commits().commitLoads((int) agreed[1], failed(agreed, 3 + writes, (int) agreed[1]));
      c.commits().commitWrites((int) agreed[0], failed(agreed, 3, (int) agreed[0]));
      c.commits()
          .commitL3Writes((int) agreed[2], failed(agreed, 3 + writes + loads, (int) agreed[2]));
      c.commits().commitPrefetches(agreed, 3 + writes + loads + l3Writes, prefetches);
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
