package io.kvtier.bench;

/**
 * The children of one radix node, keyed by their first page: an open-addressing table on a 64-bit
 * hash of the page, confirming every hit by comparing the page itself, so collisions cost a
 * comparison and never a wrong answer. A lookup allocates nothing, unlike a {@code HashMap} keyed
 * by a page object, which matters because every page of every prompt is looked up once.
 */
final class ChildTable {

  private long[] hashes = new long[4];
  private ReferenceRadixCache.Node[] nodes = new ReferenceRadixCache.Node[4];
  private int size;

  int size() {
    return size;
  }

  /** The child whose first page equals {@code key[from, from + pageSize)}, or null. */
  ReferenceRadixCache.Node find(long hash, int[] key, int from, int pageSize) {
    int mask = nodes.length - 1;
    for (int i = home(hash, mask); ; i = (i + 1) & mask) {
      ReferenceRadixCache.Node n = nodes[i];
      if (n == null) {
        return null;
      }
      if (hashes[i] == hash && n.firstPageEquals(key, from, pageSize)) {
        return n;
      }
    }
  }

  /** Adds a child whose first page no other child has. */
  void add(long hash, ReferenceRadixCache.Node child) {
    if (2 * (size + 1) > nodes.length) {
      grow();
    }
    place(hash, child);
    size++;
  }

  /** Puts {@code replacement}, which has the same first page, in the place of {@code old}. */
  void replace(long hash, ReferenceRadixCache.Node old, ReferenceRadixCache.Node replacement) {
    nodes[slotOf(hash, old)] = replacement;
  }

  /** Removes a child, shifting later entries of its probe run back so lookups still find them. */
  void remove(long hash, ReferenceRadixCache.Node child) {
    int mask = nodes.length - 1;
    int hole = slotOf(hash, child);
    nodes[hole] = null;
    size--;
    for (int j = (hole + 1) & mask; nodes[j] != null; j = (j + 1) & mask) {
      int h = home(hashes[j], mask);
      // the entry at j may move to the hole unless its home lies cyclically in (hole, j]
      boolean stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        nodes[hole] = nodes[j];
        hashes[hole] = hashes[j];
        nodes[j] = null;
        hole = j;
      }
    }
  }

  /** The child in slot {@code i}, or null; slots run from 0 to {@link #capacity()}. */
  ReferenceRadixCache.Node slot(int i) {
    return nodes[i];
  }

  int capacity() {
    return nodes.length;
  }

  private int slotOf(long hash, ReferenceRadixCache.Node child) {
    int mask = nodes.length - 1;
    for (int i = home(hash, mask); ; i = (i + 1) & mask) {
      if (nodes[i] == child) {
        return i;
      }
      if (nodes[i] == null) {
        throw new IllegalStateException("node " + child.id + " is not a child in this table");
      }
    }
  }

  private void place(long hash, ReferenceRadixCache.Node child) {
    int mask = nodes.length - 1;
    int i = home(hash, mask);
    while (nodes[i] != null) {
      i = (i + 1) & mask;
    }
    nodes[i] = child;
    hashes[i] = hash;
  }

  private void grow() {
    long[] oldHashes = hashes;
    ReferenceRadixCache.Node[] oldNodes = nodes;
    hashes = new long[2 * oldNodes.length];
    nodes = new ReferenceRadixCache.Node[2 * oldNodes.length];
    for (int i = 0; i < oldNodes.length; i++) {
      if (oldNodes[i] != null) {
        place(oldHashes[i], oldNodes[i]);
      }
    }
  }

  private static int home(long hash, int mask) {
    return (int) (hash ^ (hash >>> 32)) & mask;
  }
}
