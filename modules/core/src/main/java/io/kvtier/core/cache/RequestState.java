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
  /** {@code own[i]} holds tokens {@code [prefixLength + i*pageSize, ...)}. */
  int[] own;
  int ownCount;
  /** The request's prepared backup over {@code own[0..pages)}, or null. */
  PreparedBackup prepared;

  RequestState(long id, long namespace, int priority, int[] tokens, RadixNode lockNode,
      int prefixLength, int expectedPages) {
    this.id = id;
    this.namespace = namespace;
    this.priority = priority;
    this.tokens = tokens;
    this.lockNode = lockNode;
    this.prefixLength = prefixLength;
    this.own = new int[Math.max(1, expectedPages)];
  }

  void ensureCapacity(int more) {
    if (ownCount + more > own.length) {
      own = Arrays.copyOf(own, Math.max(ownCount + more, own.length * 2));
    }
  }
}
