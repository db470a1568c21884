package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import java.util.BitSet;

/**
 * The replicated controller of the L3 tier (CACHE.md §12): its two state machines, the write
 * FIFO ({@link L3Writes}) and the pending prefetches ({@link L3Prefetches}), with their shared
 * counters. Every decision of either is taken from replicated state and from agreed (reduced)
 * progress only.
 */
final class L3Tier {
  /** Reduction elements per pending prefetch (see {@link L3Progress#prefetchProgress}). */
  static final int PREFETCH_WIDTH = L3Prefetches.WIDTH;

  final L3Config config;
  final L3Writes writes;
  final L3Prefetches prefetches;
  private final L3Counters counters = new L3Counters();

  L3Tier(
      L3Config config,
      CacheTree tree,
      PoolLedger ledger,
      Evictor evictor,
      L3Sink sink,
      int snapshotSlots) {
    this.config = config;
    this.writes =
        new L3Writes(tree, ledger, sink, counters, config.backupThreshold(), snapshotSlots);
    this.prefetches =
        new L3Prefetches(config, tree, ledger, evictor, sink, counters, snapshotSlots);
  }

  L3Stats stats() {
    return counters.snapshot();
  }

  /** The writes and prefetches still pending. */
  int outstanding() {
    return writes.queue.size() + prefetches.pending.size();
  }

  /** See {@link L3Writes#maybeWrite}. */
  void maybeWrite(RadixNode node) {
    writes.maybeWrite(node);
  }

  /** See {@link L3Writes#write}: a forced write, whatever the node's hit count. */
  void forceWrite(RadixNode node) {
    writes.write(node, true);
  }

  /** See {@link L3Writes#commitWrites}. */
  void commitWrites(int n, BitSet failed) {
    writes.commitWrites(n, failed);
  }

  /** See {@link L3Prefetches#start}. */
  boolean start(
      long requestId,
      long namespace,
      int[] tokens,
      int aligned,
      RadixNode anchor,
      boolean awaitTransfer) {
    return prefetches.start(requestId, namespace, tokens, aligned, anchor, awaitTransfer);
  }

  /** See {@link L3Prefetches#cancel}. */
  void cancel(long requestId) {
    prefetches.cancel(requestId);
  }

  /** See {@link L3Prefetches#take}. */
  PrefetchOutcome take(long requestId) {
    return prefetches.take(requestId);
  }

  /** See {@link L3Prefetches#prefetchWidth}. */
  int prefetchWidth() {
    return prefetches.prefetchWidth();
  }

  /** See {@link L3Prefetches#commitPrefetches}. */
  void commitPrefetches(long[] agreed, int offset, int count) {
    prefetches.commitPrefetches(agreed, offset, count);
  }
}
