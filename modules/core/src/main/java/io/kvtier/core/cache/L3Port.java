package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import java.util.BitSet;
import java.util.Optional;

/**
 * The L3 tier as the rest of the cache sees it (CACHE.md §12): {@link L3Room} over a store,
 * or {@link #NONE} for a cache without one, whose every answer is "nothing there" and whose
 * commits accept only zero items. So no caller asks whether there is an L3 tier before it calls.
 */
interface L3Port {
  /** A cache without an L3 tier. */
  L3Port NONE = new NoL3();

  /** Whether this is a real tier. */
  boolean present();

  /** The settings, or empty without a tier. */
  Optional<L3Config> config();

  /** Asked at a host commit and at every hit: writes the node to L3 if it qualifies. */
  void maybeWrite(RadixNode node);

  /**
   * Writes a host-committed node and its ancestors not in L3 whatever their hit counts (a
   * publish); nothing without a tier, or for a node not host-committed or in L3 already.
   */
  void forceWrite(RadixNode node);

  /**
   * Before an admission changes anything: fails if the request's prefetch is still running.
   *
   * @throws IllegalStateException if the request has a prefetch that is not {@code DONE}
   */
  void checkAdmittable(long requestId);

  /** At an admission that holds its lock: ends the request's done prefetch, keeps its outcome. */
  void admitted(long requestId);

  /** The outcome kept by the last {@link #admitted} of {@code requestId} that had a prefetch. */
  Optional<PrefetchOutcome> admittedPrefetch(long requestId);

  /**
   * Starts a prefetch of {@code tokens[anchor.depth, aligned)} below {@code anchor}; with {@code
   * awaitTransfer} (a transfer's decode side) whatever the prefetch threshold, and waiting for
   * every rank's fetch under the L3 timeout whatever the prefetch policy.
   */
  boolean start(
      long requestId,
      long namespace,
      int[] tokens,
      int aligned,
      RadixNode anchor,
      boolean awaitTransfer);

  /** Where the request's prefetch stands. */
  RankCache.PrefetchState state(long requestId);

  /** Ends the request's prefetch (aborted or not admitted). */
  void cancel(long requestId);

  /** Replicated: L3 writes plus pending prefetches. */
  int outstanding();

  /** Replicated: L3 writes not yet committed. */
  int pendingWrites();

  /** Replicated: prefetches probing, fetching or draining. */
  int pendingPrefetches();

  /** Rank-local: L3 writes finished here from the head of the FIFO. */
  int readyWritePrefix();

  /** Rank-local: which of the first {@code n} L3 writes failed here. */
  BitSet localWriteFailures(int n);

  /** Replicated: commits exactly {@code n} L3 writes. */
  void commitWrites(int n, BitSet failed);

  /** Rank-local: this rank's prefetch values, {@link L3Tier#PREFETCH_WIDTH} per prefetch. */
  void localPrefetchProgress(long[] into, int offset);

  /** Replicated: applies the agreed values of the first {@code count} pending prefetches. */
  void commitPrefetches(long[] agreed, int offset, int count);

  /** The replicated counters. */
  L3Stats stats();

  /** The replicated controller and the rank-local progress, for the checks; empty without. */
  Optional<L3Room> room();
}
