package io.kvtier.core.cache;

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
   * The request's own device pages: page {@code i} holds tokens {@code [prefixLength +
   * i*pageSize, ...)}. Held as runs, so that allocating them writes no slot one by one and the
   * tree takes them as runs too (see {@link SlotRuns}).
   */
  final SlotRuns own;
  /** The request's prepared backup over the first {@code pages} own pages, or null. */
  PreparedBackup prepared;

  RequestState(long id, long namespace, int priority, int[] tokens, RadixNode lockNode,
      int prefixLength, SlotRuns own) {
    this.id = id;
    this.namespace = namespace;
    this.priority = priority;
    this.tokens = tokens;
    this.lockNode = lockNode;
    this.prefixLength = prefixLength;
    this.own = own;
  }

  /** The number of own pages. */
  int ownCount() {
    return own.pages();
  }
}
