package io.kvtier.core.cache;

import io.kvtier.core.config.EvictionPolicy;

/**
 * The eviction candidates of one tier, ordered by the policy key and then by node id.
 *
 * <p>Design note: candidates change on almost every operation (a leaf is unlocked, a child is
 * evicted, a node is touched), so the order is kept incrementally as a binary min-heap with lazy
 * invalidation instead of being rebuilt or scanned. Each push stamps the node; an entry whose
 * stamp is not the node's current stamp is stale and skipped when it reaches the top. The engine
 * pushes a node whenever it becomes a candidate or its key changes while it is one, so the one
 * live entry of a node always carries its current key. Stale entries are dropped in bulk when
 * the heap grows past twice the node count, which keeps memory bounded by the tree. Keys are
 * logical clocks and counters only (replicated state), never wall time.
 */
final class EvictionHeap {
  private final EvictionPolicy policy;
  private final boolean host;
  private long[] primary = new long[64];
  private long[] secondary = new long[64];
  private long[] ids = new long[64];
  private int[] stamps = new int[64];
  private RadixNode[] nodes = new RadixNode[64];
  private int size;

  EvictionHeap(EvictionPolicy policy, boolean host) {
    this.policy = policy;
    this.host = host;
  }

  int size() {
    return size;
  }

  /** The first component of a node's eviction key; smaller leaves first. */
  static long primaryKey(EvictionPolicy policy, RadixNode n) {
    return switch (policy) {
      case LRU -> n.lastAccess;
      case LFU -> n.hitCount;
      case FIFO -> n.created;
      case MRU -> -n.lastAccess;
      case FILO -> -n.created;
      case PRIORITY -> n.priority;
      case SLRU -> n.hitCount >= 2 ? 1 : 0;
    };
  }

  /** The second component of a node's eviction key. */
  static long secondaryKey(EvictionPolicy policy, RadixNode n) {
    return switch (policy) {
      case LRU, FIFO, MRU, FILO -> 0;
      case LFU, PRIORITY, SLRU -> n.lastAccess;
    };
  }

  /** Whether the policy's key reads the access clock, so a touch must re-push a candidate. */
  static boolean readsAccessClock(EvictionPolicy policy) {
    return policy != EvictionPolicy.FIFO && policy != EvictionPolicy.FILO;
  }

  private int stampOf(RadixNode n) {
    return host ? n.hostStamp : n.deviceStamp;
  }

  private int nextStamp(RadixNode n) {
    return host ? ++n.hostStamp : ++n.deviceStamp;
  }

  /**
   * Adds a node with its current key; any earlier entry of the node becomes stale.
   *
   * @param n the node
   * @param liveNodes the tree's node count, to bound the stale entries
   */
  void push(RadixNode n, int liveNodes) {
    if (size == nodes.length) {
      if (size > 2 * liveNodes + 64) {
        compact();
      }
      if (size == nodes.length) {
        grow();
      }
    }
    int i = size++;
    primary[i] = primaryKey(policy, n);
    secondary[i] = secondaryKey(policy, n);
    ids[i] = n.id;
    stamps[i] = nextStamp(n);
    nodes[i] = n;
    siftUp(i);
  }

  /**
   * Removes the top entry and returns its node if the entry is live.
   *
   * @return the node of a live entry, or null for a stale entry (call again while not empty)
   */
  RadixNode pollLive() {
    RadixNode n = nodes[0];
    boolean live = stamps[0] == stampOf(n) && !n.deleted;
    removeTop();
    if (live) {
      // The node has no live entry any more; a later push gives it a new one.
      nextStamp(n);
      return n;
    }
    return null;
  }

  /** Whether a node has a live entry; O(size), for the invariant checker only. */
  boolean hasLiveEntry(RadixNode n) {
    int stamp = stampOf(n);
    for (int i = 0; i < size; i++) {
      if (nodes[i] == n && stamps[i] == stamp) {
        return true;
      }
    }
    return false;
  }

  /** The nodes of live entries, for the invariant checker. */
  java.util.Set<RadixNode> liveNodes() {
    java.util.Set<RadixNode> live =
        java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    for (int i = 0; i < size; i++) {
      if (stamps[i] == stampOf(nodes[i]) && !nodes[i].deleted) {
        live.add(nodes[i]);
      }
    }
    return live;
  }

  private void removeTop() {
    int last = --size;
    move(last, 0);
    nodes[last] = null;
    if (size > 0) {
      siftDown(0);
    }
  }

  private void compact() {
    int kept = 0;
    for (int i = 0; i < size; i++) {
      if (stamps[i] == stampOf(nodes[i]) && !nodes[i].deleted) {
        move(i, kept++);
      }
    }
    for (int i = kept; i < size; i++) {
      nodes[i] = null;
    }
    size = kept;
    for (int i = size / 2 - 1; i >= 0; i--) {
      siftDown(i);
    }
  }

  private void grow() {
    int cap = nodes.length * 2;
    primary = java.util.Arrays.copyOf(primary, cap);
    secondary = java.util.Arrays.copyOf(secondary, cap);
    ids = java.util.Arrays.copyOf(ids, cap);
    stamps = java.util.Arrays.copyOf(stamps, cap);
    nodes = java.util.Arrays.copyOf(nodes, cap);
  }

  private boolean less(int a, int b) {
    if (primary[a] != primary[b]) {
      return primary[a] < primary[b];
    }
    if (secondary[a] != secondary[b]) {
      return secondary[a] < secondary[b];
    }
    return ids[a] < ids[b];
  }

  private void move(int from, int to) {
    primary[to] = primary[from];
    secondary[to] = secondary[from];
    ids[to] = ids[from];
    stamps[to] = stamps[from];
    nodes[to] = nodes[from];
  }

  private void swap(int a, int b) {
    long p = primary[a];
    primary[a] = primary[b];
    primary[b] = p;
    long s = secondary[a];
    secondary[a] = secondary[b];
    secondary[b] = s;
    long id = ids[a];
    ids[a] = ids[b];
    ids[b] = id;
    int st = stamps[a];
    stamps[a] = stamps[b];
    stamps[b] = st;
    RadixNode n = nodes[a];
    nodes[a] = nodes[b];
    nodes[b] = n;
  }

  private void siftUp(int i) {
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      if (!less(i, parent)) {
        return;
      }
      swap(i, parent);
      i = parent;
    }
  }

  private void siftDown(int i) {
    while (true) {
      int left = 2 * i + 1;
      if (left >= size) {
        return;
      }
      int child = left + 1 < size && less(left + 1, left) ? left + 1 : left;
      if (!less(child, i)) {
        return;
      }
      swap(i, child);
      i = child;
    }
  }
}
