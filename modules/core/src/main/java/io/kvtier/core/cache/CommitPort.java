package io.kvtier.core.cache;

import java.util.BitSet;

/**
 * The commit handshake of one rank's cache (CACHE.md §9, ARCHITECTURE.md §4 rule 2): what the
 * rank protocol's sync step ({@code io.kvtier.core.rank.CommitSync}) reads and commits, apart
 * from the cache's request API. The rank-local answers (ready prefixes, failure sets, prefetch
 * progress) decide nothing; copy completion enters the replicated state only through the
 * commits, with agreed arguments, so that several ranks reduce the answers first. The pending
 * counts are replicated and give the reduction's array the same shape on every rank. A single
 * rank that drives a cache without an engine calls {@link RankCache#sync()}, or the
 * single-rank forms {@link #commitWrites(int)} and {@link #commitLoads(int)}.
 *
 * <p>Bound to an engine ({@link RankCache#bindSchedule}), the commits throw {@link
 * IllegalStateException} outside its steps, as the cache's other replicated mutators do.
 */
public interface CommitPort {
  /** Reduction elements per pending prefetch in {@link #localPrefetchProgress}. */
  int PREFETCH_SYNC_WIDTH = L3Tier.PREFETCH_WIDTH;

  /** Replicated: pending backups, loads, L3 writes and prefetches; the sync may skip iff 0. */
  int outstandingOperations();

  /** Replicated: write acks not yet committed. */
  int pendingWrites();

  /** Replicated: load acks not yet committed. */
  int pendingLoads();

  /** Replicated: L3 writes not yet committed. */
  int pendingL3Writes();

  /** Replicated: prefetches probing, fetching or draining, {@link #PREFETCH_SYNC_WIDTH} each. */
  int pendingPrefetches();

  /**
   * Rank-local: write acks from the head of the write FIFO that have finished copying, asked
   * without blocking. Decides nothing: the MIN of it across the ranks, with the failures agreed
   * in the same reduction, goes to {@link #commitWrites(int, BitSet)}, as the engine's sync step
   * does ({@code CommitSync}).
   */
  int readyWritePrefix();

  /**
   * Rank-local: load acks from the head of the load FIFO that have finished copying. Decides
   * nothing: the MIN of it across the ranks, with the agreed failures, goes to {@link
   * #commitLoads(int, BitSet)}.
   */
  int readyLoadPrefix();

  /** Rank-local: L3 writes from the head of the FIFO that have finished on this rank. */
  int readyL3WritePrefix();

  /** Rank-local: which of the first {@code n <= readyWritePrefix()} write acks failed here. */
  BitSet localWriteFailures(int n);

  /** Rank-local: which of the first {@code n <= readyLoadPrefix()} load acks failed here. */
  BitSet localLoadFailures(int n);

  /** Rank-local: which of the first {@code n <= readyL3WritePrefix()} L3 writes failed here. */
  BitSet localL3WriteFailures(int n);

  /**
   * Rank-local: writes this rank's {@link #PREFETCH_SYNC_WIDTH} values per pending prefetch, in
   * the replicated order, into {@code into} from {@code offset}: pages found or fetched (MIN), -1
   * if this rank gave up (MIN of it is the MAX of "gave up"), 1 if this rank's work has stopped.
   */
  void localPrefetchProgress(long[] into, int offset);

  /**
   * Replicated: commits exactly {@code n} load acks: the chains are unlocked. A load in {@code
   * failed} (agreed) invalidates its pages and what was computed on them ({@link
   * LoadBack#failed()}).
   */
  void commitLoads(int n, BitSet failed);

  /**
   * Replicated: commits exactly {@code n} write acks from the head of the FIFO (every rank must
   * have finished them). A committed backup becomes {@code COMMITTED} and visible; one in {@code
   * failed} (agreed indices from the head), below a parent that is not committed, or below a
   * load-back that failed or has not committed yet, is rolled back and its host slots freed
   * (commit loads first, {@link #commitLoads(int, BitSet)}, as the package description says).
   * Write-back victims are demoted.
   */
  void commitWrites(int n, BitSet failed);

  /**
   * Replicated: commits exactly {@code n} L3 writes (every rank must have finished them): their
   * nodes' host copies lose the protection, and the nodes are marked as stored unless the write
   * is in {@code failed}. Without an L3 tier only {@code n == 0} is accepted.
   */
  void commitL3Writes(int n, BitSet failed);

  /**
   * Replicated: applies the agreed (MIN-reduced) values of the first {@code count} pending
   * prefetches from {@code offset}: a finished probe reserves host slots and starts the fetch, a
   * fetch is decided by the policy and its agreed pages inserted, a drained reservation is freed.
   * Without an L3 tier only {@code count == 0} is accepted.
   */
  void commitPrefetches(long[] agreed, int offset, int count);

  /**
   * Single rank only: commits the first {@code n <= readyWritePrefix()} write acks with this
   * rank's own failures; on several ranks use {@link #commitWrites(int, BitSet)} with the agreed
   * failures, or one rank's rollback is another's commit.
   */
  void commitWrites(int n);

  /**
   * Single rank only: commits the first {@code n <= readyLoadPrefix()} load acks with this rank's
   * own failures; on several ranks use {@link #commitLoads(int, BitSet)} with the agreed failures.
   */
  void commitLoads(int n);
}
