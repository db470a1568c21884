package io.kvtier.core.cache;

import java.util.ArrayList;

/**
 * One entry of the write FIFO (replicated): the nodes a registered backup covers, parents before
 * children, which stay {@code PENDING} until the entry is committed; a split adds the new prefix
 * node just before the node it was split from.
 *
 * <p>A <em>retirement</em> entry covers no node: it holds the host slots of a prepared backup
 * that was rolled back after some of its layers had been streamed, and frees them at its commit,
 * when every rank has finished the copies into them (see {@link Backups#retire}).
 *
 * <p>The copies themselves are rank-local and live in {@link LocalProgress}, in the same FIFO
 * order; nothing here can reach them.
 */
final class WriteAck {
  final long sequence;
  final ArrayList<RadixNode> nodes = new ArrayList<>(2);

  /** Pages of the write-back victim that this ack frees at its commit. */
  int writeBackPages;

  /** Host slots a retirement frees at its commit; null for a backup of nodes. */
  final int[] retiredHostSlots;

  /** The request whose prepared backup this ack carries (attached or retired); -1 if none. */
  final long preparedRequest;

  /**
   * Device slots that the streamed copies this ack carries read, held in the allocator until its
   * commit (a release meanwhile is deferred); null if it carries no streamed copy.
   */
  final int[] heldDeviceSlots;

  WriteAck(long sequence) {
    this(sequence, null, -1, null);
  }

  WriteAck(long sequence, int[] retiredHostSlots, long preparedRequest, int[] heldDeviceSlots) {
    this.sequence = sequence;
    this.retiredHostSlots = retiredHostSlots;
    this.preparedRequest = preparedRequest;
    this.heldDeviceSlots = heldDeviceSlots;
  }

  boolean isRetirement() {
    return retiredHostSlots != null;
  }

  void addBefore(RadixNode existing, RadixNode added) {
    int i = nodes.indexOf(existing);
    nodes.add(i < 0 ? nodes.size() : i, added);
  }

  int pages() {
    if (retiredHostSlots != null) {
      return retiredHostSlots.length;
    }
    int pages = 0;
    for (RadixNode n : nodes) {
      pages += n.pageCount;
    }
    return pages;
  }
}
