package io.kvtier.core.cache;

import io.kvtier.core.config.EvictionPolicy;
import java.util.Arrays;

/**
 * The eviction candidates of one tier, ordered by the policy key and then by node id.
 *
 * <p>Design note: candidates change on almost every operation (a leaf is unlocked, a child is
 * evicted, a node is touched), so the order is kept incrementally with lazy invalidation instead
 * of being rebuilt or scanned. Each push stamps the node; an entry whose stamp is not the node's
 * current stamp is stale and skipped when it comes first. The engine pushes a node whenever it
 * becomes a candidate or its key changes while it is one, so the one live entry of a node always
 * carries its current key. Stale entries are dropped in bulk when the entries grow past twice
 * the node count, which keeps memory bounded by the tree. Keys are logical clocks and counters
 * only (replicated state), never wall time.
 *
 * <p>Hot path: under LRU most pushes carry the newest key (a node just touched or created), so
 * an entry whose key is not below the last one appended goes to a sorted run, a queue whose head
 * is its minimum; only the others (a parent that becomes a leaf with its old access time, for
 * example) go to a binary min-heap. A poll takes the smaller of the run's head and the heap's
 * top, which gives exactly the order of one heap over all entries. Why: a poll from a heap of a
 * few hundred entries costs a sift down with an unpredictable branch per level, about a tenth of
 * a replayed request's time, and under LRU every push of the replay goes to the run, so a poll is
 * O(1) (6-11% per request; docs/PERFORMANCE.md). The heap's sifts move a hole rather than
 * swapping entries (one move per level instead of two).
 */
final class EvictionHeap {
  private final EvictionPolicy policy;
  private final boolean host;

  /** The binary min-heap. */
  private final Entries heap = new Entries();

  private int size;

  /** The sorted run, a ring: entry {@code (head + i) & (capacity - 1)} is the i-th smallest. */
  private final Entries run = new Entries();

  private int runHead;
  private int runSize;

  EvictionHeap(EvictionPolicy policy, boolean host) {
    this.policy = policy;
    this.host = host;
  }

  int size() {
    return size + runSize;
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
    long p = primaryKey(policy, n);
    long s = secondaryKey(policy, n);
    long id = n.id;
    if (runSize == 0 || !run.keyBefore(p, s, id, runIndex(runSize - 1))) {
      if (runSize == run.capacity()) {
        makeRoom(liveNodes);
      }
      if (runSize == run.capacity()) {
        growRun();
      }
      // compact() may have emptied the run; the key is not below its last entry either way
      run.put(runIndex(runSize++), p, s, id, nextStamp(n), n);
      return;
    }
    if (size == heap.capacity()) {
      makeRoom(liveNodes);
      if (size == heap.capacity()) {
        heap.grow();
      }
    }
    siftUp(size++, p, s, id, nextStamp(n), n);
  }

  /**
   * Removes the first entry and returns its node if the entry is live.
   *
   * @return the node of a live entry, or null for a stale entry (call again while not empty)
   */
  RadixNode pollLive() {
    RadixNode n;
    boolean live;
    int r = runIndex(0);
    if (runSize > 0 && (size == 0 || run.before(r, heap, 0))) {
      n = run.nodes[r];
      live = run.stamps[r] == stampOf(n) && !n.deleted;
      run.nodes[r] = null;
      runHead = (runHead + 1) & (run.capacity() - 1);
      runSize--;
    } else {
      n = heap.nodes[0];
      live = heap.stamps[0] == stampOf(n) && !n.deleted;
      removeTop();
    }
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
      if (heap.nodes[i] == n && heap.stamps[i] == stamp) {
        return true;
      }
    }
    for (int i = 0; i < runSize; i++) {
      int r = runIndex(i);
      if (run.nodes[r] == n && run.stamps[r] == stamp) {
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
      if (isLive(heap, i)) {
        live.add(heap.nodes[i]);
      }
    }
    for (int i = 0; i < runSize; i++) {
      if (isLive(run, runIndex(i))) {
        live.add(run.nodes[runIndex(i)]);
      }
    }
    return live;
  }

  private boolean isLive(Entries e, int i) {
    return e.stamps[i] == stampOf(e.nodes[i]) && !e.nodes[i].deleted;
  }

  private int runIndex(int i) {
    return (runHead + i) & (run.capacity() - 1);
  }

  private void removeTop() {
    int last = --size;
    RadixNode n = heap.nodes[last];
    heap.nodes[last] = null;
    if (last > 0) {
      siftDown(0, heap.primary[last], heap.secondary[last], heap.ids[last], heap.stamps[last], n);
    }
  }

  /** Drops the stale entries of both parts if they are more than the tree justifies. */
  private void makeRoom(int liveNodes) {
    if (size + runSize > 2 * liveNodes + 64) {
      compact();
    }
  }

  private void compact() {
    int kept = 0;
    for (int i = 0; i < size; i++) {
      if (isLive(heap, i)) {
        heap.move(i, kept++);
      }
    }
    Arrays.fill(heap.nodes, kept, size, null);
    size = kept;
    for (int i = size / 2 - 1; i >= 0; i--) {
      siftDown(i, heap.primary[i], heap.secondary[i], heap.ids[i], heap.stamps[i], heap.nodes[i]);
    }
    // The run stays sorted when entries are dropped from it; its head moves to index 0.
    Entries compacted = new Entries(run.capacity());
    int k = 0;
    for (int i = 0; i < runSize; i++) {
      int r = runIndex(i);
      if (isLive(run, r)) {
        compacted.copyFrom(run, r, k++);
      }
    }
    run.adopt(compacted);
    runHead = 0;
    runSize = k;
  }

  private void growRun() {
    Entries larger = new Entries(run.capacity() * 2);
    for (int i = 0; i < runSize; i++) {
      larger.copyFrom(run, runIndex(i), i);
    }
    run.adopt(larger);
    runHead = 0;
  }

  /** Places the entry {@code (p, s, id, stamp, n)} at heap hole {@code i} or above it. */
  private void siftUp(int i, long p, long s, long id, int stamp, RadixNode n) {
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      if (!heap.keyBefore(p, s, id, parent)) {
        break;
      }
      heap.move(parent, i);
      i = parent;
    }
    heap.put(i, p, s, id, stamp, n);
  }

  /** Places the entry {@code (p, s, id, stamp, n)} at heap hole {@code i} or below it. */
  private void siftDown(int i, long p, long s, long id, int stamp, RadixNode n) {
    int half = size >>> 1;
    while (i < half) {
      int child = 2 * i + 1;
      if (child + 1 < size && heap.before(child + 1, heap, child)) {
        child++;
      }
      if (!heap.entryBefore(child, p, s, id)) {
        break;
      }
      heap.move(child, i);
      i = child;
    }
    heap.put(i, p, s, id, stamp, n);
  }

  /** Entries as parallel arrays: key {@code (primary, secondary, id)}, stamp and node. */
  private static final class Entries {
    long[] primary;
    long[] secondary;
    long[] ids;
    int[] stamps;
    RadixNode[] nodes;

    Entries() {
      this(64);
    }

    Entries(int capacity) {
      primary = new long[capacity];
      secondary = new long[capacity];
      ids = new long[capacity];
      stamps = new int[capacity];
      nodes = new RadixNode[capacity];
    }

    int capacity() {
      return nodes.length;
    }

    void grow() {
      int cap = nodes.length * 2;
      primary = Arrays.copyOf(primary, cap);
      secondary = Arrays.copyOf(secondary, cap);
      ids = Arrays.copyOf(ids, cap);
      stamps = Arrays.copyOf(stamps, cap);
      nodes = Arrays.copyOf(nodes, cap);
    }

    void adopt(Entries other) {
      primary = other.primary;
      secondary = other.secondary;
      ids = other.ids;
      stamps = other.stamps;
      nodes = other.nodes;
    }

    /** Whether entry {@code a} orders before entry {@code b} of {@code other}. */
    boolean before(int a, Entries other, int b) {
      if (primary[a] != other.primary[b]) {
        return primary[a] < other.primary[b];
      }
      if (secondary[a] != other.secondary[b]) {
        return secondary[a] < other.secondary[b];
      }
      return ids[a] < other.ids[b];
    }

    /** Whether entry {@code a} orders before the key {@code (p, s, id)}. */
    boolean entryBefore(int a, long p, long s, long id) {
      if (primary[a] != p) {
        return primary[a] < p;
      }
      if (secondary[a] != s) {
        return secondary[a] < s;
      }
      return ids[a] < id;
    }

    /** Whether the key {@code (p, s, id)} orders before entry {@code b}. */
    boolean keyBefore(long p, long s, long id, int b) {
      if (p != primary[b]) {
        return p < primary[b];
      }
      if (s != secondary[b]) {
        return s < secondary[b];
      }
      return id < ids[b];
    }

    void move(int from, int to) {
      primary[to] = primary[from];
      secondary[to] = secondary[from];
      ids[to] = ids[from];
      stamps[to] = stamps[from];
      nodes[to] = nodes[from];
    }

    void copyFrom(Entries other, int from, int to) {
      put(
          to,
          other.primary[from],
          other.secondary[from],
          other.ids[from],
          other.stamps[from],
          other.nodes[from]);
    }

    void put(int i, long p, long s, long id, int stamp, RadixNode n) {
      primary[i] = p;
      secondary[i] = s;
      ids[i] = id;
      stamps[i] = stamp;
      nodes[i] = n;
    }
  }
}
