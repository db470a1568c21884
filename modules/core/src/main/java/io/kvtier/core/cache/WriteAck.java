package io.kvtier.core.cache;

import io.kvtier.spi.TransferHandle;
import java.util.ArrayList;

/**
 * One registered backup in the write FIFO: the nodes it covers, parents before children, and the
 * device-to-host copy that fills their host slots. The nodes stay {@code PENDING} until the ack
 * is committed; a split adds the new prefix node just before the node it was split from.
 */
final class WriteAck {
  final long sequence;
  final ArrayList<RadixNode> nodes = new ArrayList<>(2);
  final TransferHandle handle;
  /** Pages of the write-back victim that this ack frees at its commit. */
  int writeBackPages;

  WriteAck(long sequence, TransferHandle handle) {
    this.sequence = sequence;
    this.handle = handle;
  }

  void addBefore(RadixNode existing, RadixNode added) {
    int i = nodes.indexOf(existing);
    nodes.add(i < 0 ? nodes.size() : i, added);
  }

  int pages() {
    int pages = 0;
    for (RadixNode n : nodes) {
      pages += n.pageCount;
    }
    return pages;
  }
}
