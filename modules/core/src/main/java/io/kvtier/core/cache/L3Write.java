package io.kvtier.core.cache;

import java.util.ArrayList;

/**
 * One entry of the replicated L3 write FIFO: the nodes whose host copies are being put to the
 * store, protected (hostRef) until the entry commits, and among them the nodes whose host
 * recurrent-state snapshot the same put stores (HYBRID.md §6). Holds no handle of the
 * rank-local put.
 */
final class L3Write {
  final long sequence;

  /** Covered nodes, parents first; a split inserts the new top half before its old node. */
  final ArrayList<RadixNode> nodes = new ArrayList<>(2);

  /**
   * The covered nodes whose snapshot this write puts, by identity: a split leaves the snapshot
   * with the old node (it keeps its end), so the top half a split adds is never here.
   */
  final ArrayList<RadixNode> snapshotNodes = new ArrayList<>(0);

  final int pages;

  L3Write(long sequence, int pages) {
    this.sequence = sequence;
    this.pages = pages;
  }

  /** A split made {@code top} the upper half of {@code node}: it joins this write before it. */
  void addBefore(RadixNode node, RadixNode top) {
    nodes.add(nodes.indexOf(node), top);
  }

  /** Whether this write puts {@code node}'s snapshot. */
  boolean putsSnapshotOf(RadixNode node) {
    for (RadixNode n : snapshotNodes) {
      if (n == node) {
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return "L3Write[seq="
        + sequence
        + ", nodes="
        + nodes.size()
        + ", pages="
        + pages
        + (snapshotNodes.isEmpty() ? "" : ", snapshots=" + snapshotNodes.size())
        + "]";
  }
}
