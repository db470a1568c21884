package io.kvtier.core.cache;

/**
 * The nodes whose replicated fields changed since two readers last looked: the incremental
 * replica digest ({@link ReplicaDigest#of}) and the incremental invariant check ({@link
 * CacheInvariants#checkChanged}). The rooms call {@link #mark} wherever they change a node that
 * either reads; {@link PoolLedger#account} marks every node it accounts, which covers the slots,
 * lockRef, hostRef, backup state and invalid mark, so the other calls are few (hits, access
 * stamps, child links, pending-load links).
 *
 * <p>Off until a reader first asks ({@link #startDigest}, {@link #startCheck}): a cache that nobody checks incrementally
 * (a server, {@code kvtier replay}) pays one predictable branch per mark. A missed mark cannot
 * hide a divergence: the full check ({@link CacheInvariants#check}) recomputes every node's digest
 * term and fails, naming the node, where the term kept here is stale.
 *
 * <p>Each reader has its own list and its own flag on the node, so a node is listed at most once
 * per reader however often it changes; a node deleted since stays listed and is dropped by the
 * reader. Not thread-safe: the scheduler thread owns it, as it owns the cache.
 */
final class ChangedNodes {
  private boolean digestTracking;
  private boolean checkTracking;
  private RadixNode[] forDigest = new RadixNode[64];
  private int digestCount;
  private RadixNode[] forCheck = new RadixNode[64];
  private int checkCount;

  /** The sum of the digest terms of the nodes in the tree (see {@link ReplicaDigest}). */
  long nodeDigestSum;

  /**
   * The incremental check's sums over the tree's non-root nodes, from the last full check on:
   * its count and its pool categories. A node counted in them has {@link RadixNode#keptEpoch}
   * equal to {@link #keptEpoch} (0 is never an epoch).
   */
  int keptEpoch;

  int keptNodes;
  long keptDeviceEvictable;
  long keptDeviceProtected;
  long keptHostEvictable;
  long keptHostProtected;

  /** Adds ({@code sign} +1) or removes a node's device pages, signed as evictable or not. */
  void keptDevice(int pages, int sign) {
    if (pages > 0) {
      keptDeviceEvictable += sign * pages;
    } else {
      keptDeviceProtected -= sign * pages;
    }
  }

  void keptHost(int pages, int sign) {
    if (pages > 0) {
      keptHostEvictable += sign * pages;
    } else {
      keptHostProtected -= sign * pages;
    }
  }

  /** Records that {@code n} changed; does nothing until a reader started tracking. */
  void mark(RadixNode n) {
    if (digestTracking && !n.digestListed) {
      n.digestListed = true;
      if (digestCount == forDigest.length) {
        forDigest = java.util.Arrays.copyOf(forDigest, digestCount * 2);
      }
      forDigest[digestCount++] = n;
    }
    if (checkTracking && !n.checkListed) {
      n.checkListed = true;
      if (checkCount == forCheck.length) {
        forCheck = java.util.Arrays.copyOf(forCheck, checkCount * 2);
      }
      forCheck[checkCount++] = n;
    }
  }

  /** Whether marks are recorded for the digest. */
  boolean digestTracking() {
    return digestTracking;
  }

  /** Starts recording for the digest, which has just seen the whole tree. */
  void startDigest() {
    digestTracking = true;
  }

  /** Whether marks are recorded for the check. */
  boolean checkTracking() {
    return checkTracking;
  }

  /** Starts recording for the check, which has just seen the whole tree. */
  void startCheck() {
    checkTracking = true;
  }

  /** The nodes changed since the digest last looked; valid until {@link #clearDigest}. */
  RadixNode[] digestNodes() {
    return forDigest;
  }

  int digestCount() {
    return digestCount;
  }

  void clearDigest() {
    for (int i = 0; i < digestCount; i++) {
      forDigest[i].digestListed = false;
      forDigest[i] = null;
    }
    digestCount = 0;
    shrinkDigest();
  }

  /** The nodes changed since the check last looked; valid until {@link #clearCheck}. */
  RadixNode[] checkNodes() {
    return forCheck;
  }

  int checkCount() {
    return checkCount;
  }

  void clearCheck() {
    for (int i = 0; i < checkCount; i++) {
      forCheck[i].checkListed = false;
      forCheck[i] = null;
    }
    checkCount = 0;
    if (forCheck.length > 4096) {
      forCheck = new RadixNode[64];
    }
  }

  /** A burst (a full tree's worth after a long unchecked stretch) does not pin its array. */
  private void shrinkDigest() {
    if (forDigest.length > 4096) {
      forDigest = new RadixNode[64];
    }
  }
}
