package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * What the cache holds for one active request: the lock on its matched prefix and the device
 * pages it allocated for the tokens after that prefix.
 */
final class RequestState {
  final long id;
  final long namespace;
  final int priority;
  /** The admitted tokens; replaced by the array given to a chunk insert. Not copied. */
  int[] tokens;
  /** The deepest locked node; the prefix up to it is the tree's, the rest the request's. */
  RadixNode lockNode;
  int prefixLength;
  /**
   * {@code own[i]} holds tokens {@code [prefixLength + i*pageSize, ...)}. The tree copies the
   * slots it takes, so the array is the request's alone and goes back to the {@link Pool} when
   * the request ends.
   */
  int[] own;
  int ownCount;
  /**
   * The runs of consecutive slots in {@code own[0..ownCount)} as the allocator wrote them, kept
   * at page size 1 only (see {@link CacheTree#ownRuns}); null otherwise.
   */
  PageAllocator.Runs runs;
  /** The request's prepared backup over {@code own[0..pages)}, or null. */
  PreparedBackup prepared;

  RequestState(long id, long namespace, int priority, int[] tokens, RadixNode lockNode,
      int prefixLength, int[] own) {
    this.id = id;
    this.namespace = namespace;
    this.priority = priority;
    this.tokens = tokens;
    this.lockNode = lockNode;
    this.prefixLength = prefixLength;
    this.own = own;
  }

  void ensureCapacity(int more) {
    if (ownCount + more > own.length) {
      own = Arrays.copyOf(own, Math.max(ownCount + more, own.length * 2));
    }
  }

  /**
   * The page arrays of ended requests, handed to new ones. Why: at page size 1 a missed
   * shared-prefix request has 1,340 pages, and a fresh 5 KB array per request is memory that no
   * cache holds (the collector hands out new memory), while the array of the request before is
   * warm. Contents are not cleared: only {@code own[0..ownCount)} is ever read.
   */
  static final class Pool {
    /** Enough for a scheduler's batch; arrays beyond it are left to the collector. */
    private static final int KEPT = 64;
    private final int[][] spare = new int[KEPT][];
    private int count;

    /** An array of at least {@code pages} (and at least one) slots. */
    int[] take(int pages) {
      int wanted = Math.max(1, pages);
      if (count > 0) {
        int[] a = spare[--count];
        spare[count] = null;
        return a.length >= wanted ? a : new int[Math.max(wanted, a.length * 2)];
      }
      return new int[wanted];
    }

    /** Takes back the array of a request that ended; the request must not use it again. */
    void give(int[] own) {
      if (count < KEPT) {
        spare[count++] = own;
      }
    }
  }
}
