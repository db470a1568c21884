package io.kvtier.core.cache;

import java.util.ArrayList;

/**
 * One entry of the replicated L3 write FIFO: the nodes whose host copies are being put to the
 * store, protected (hostRef) until the entry commits. Holds no handle of the rank-local put.
 */
final class L3Write {
  final long sequence;

  /** Covered nodes, parents first; a split inserts the new top half before its old node. */
  final ArrayList<RadixNode> nodes = new ArrayList<>(2);

  final int pages;

  L3Write(long sequence, int pages) {
    this.sequence = sequence;
    this.pages = pages;
  }

  /** A split made {@code top} the upper half of {@code node}: it joins this write before it. */
  void addBefore(RadixNode node, RadixNode top) {
    nodes.add(nodes.indexOf(node), top);
  }

  @Override
  public String toString() {
    return "L3Write[seq=" + sequence + ", nodes=" + nodes.size() + ", pages=" + pages + "]";
  }
}
