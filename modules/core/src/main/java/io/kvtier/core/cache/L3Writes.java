package io.kvtier.core.cache;

import java.util.ArrayDeque;
import java.util.BitSet;

/**
 * The write half of the L3 tier (CACHE.md §12): the FIFO of L3 writes, each taken from
 * replicated state at registration and applied at its agreed commit.
 *
 * <p>A host-committed node whose hit count reached the backup threshold is written with every
 * ancestor not yet in L3 (parents first, so the store holds prefixes). Each covered node's host
 * copy is protected by {@code hostRef} until the write's agreed commit, so host eviction cannot
 * free or reuse the slots the put reads. A write failed on some rank only leaves the nodes
 * unmarked; the next hit may try again.
 */
final class L3Writes {
  private final CacheTree tree;
  private final PoolLedger ledger;
  private final L3Sink sink;
  private final L3Counters counters;
  private final long backupThreshold;
  private final int snapshotSlots;

  /** The writes registered and not yet committed, oldest first. */
  final ArrayDeque<L3Write> queue = new ArrayDeque<>();

  /** The next write's sequence number. */
  long sequence;

  L3Writes(
      CacheTree tree,
      PoolLedger ledger,
      L3Sink sink,
      L3Counters counters,
      long backupThreshold,
      int snapshotSlots) {
    this.tree = tree;
    this.ledger = ledger;
    this.sink = sink;
    this.counters = counters;
    this.backupThreshold = backupThreshold;
    this.snapshotSlots = snapshotSlots;
  }

  /**
   * Asked at a host commit and at every hit: writes the node (and its ancestors not in L3) if it
   * is host-committed, not in L3 yet and hit often enough.
   */
  void maybeWrite(RadixNode node) {
    write(node, false);
  }

  /**
   * Writes a host-committed node and its ancestors not in L3, as {@link #maybeWrite} does, but
   * with {@code force} whatever its hit count: the publish of a prompt's pages (a transfer's
   * prefill side, {@link Publications}).
   */
  void write(RadixNode node, boolean force) {
    if (node.l3State != RadixNode.L3_NONE
        || node.backupState != BackupState.COMMITTED
        || node.invalid != 0
        || (!force && node.hitCount < backupThreshold)
        || node.parent == null) {
      return;
    }
    int count = 1;
    int pages = node.pageCount;
    RadixNode top = node;
    while (top.parent.parent != null && top.parent.l3State == RadixNode.L3_NONE) {
      top = top.parent;
      if (top.backupState != BackupState.COMMITTED || top.invalid != 0) {
        return;
      }
      count++;
      pages += top.pageCount;
    }
    RadixNode[] chain = new RadixNode[count];
    int i = count;
    for (RadixNode n = node; i > 0; n = n.parent) {
      chain[--i] = n;
    }
    byte[][] hashes = new byte[pages][];
    int[] slots = new int[pages];
    L3Write write = new L3Write(sequence++, pages);
    int offset = 0;
    for (RadixNode n : chain) {
      byte[][] h = tree.pageHashes(n);
      System.arraycopy(h, 0, hashes, offset, n.pageCount);
      System.arraycopy(n.hostSlots, n.hostOffset, slots, offset, n.pageCount);
      offset += n.pageCount;
      ledger.account(n, -1);
      n.hostRef++;
      n.l3State = RadixNode.L3_WRITING;
      n.pendingL3Write = write;
      ledger.account(n, +1);
      write.nodes.add(n);
      if (snapshotSlots > 0 && n.hostStateSlots != null) {
        write.snapshotNodes.add(n);
      }
    }
    byte[][] snapshotHashes = new byte[write.snapshotNodes.size()][];
    int[] snapshotSlotsOf = new int[snapshotSlots * snapshotHashes.length];
    for (int k = 0; k < snapshotHashes.length; k++) {
      RadixNode n = write.snapshotNodes.get(k);
      snapshotHashes[k] = L3Prefetches.last(tree.pageHashes(n));
      System.arraycopy(n.hostStateSlots, 0, snapshotSlotsOf, k * snapshotSlots, snapshotSlots);
    }
    sink.put(hashes, slots, snapshotHashes, snapshotSlotsOf);
    queue.add(write);
    counters.increment(L3Counter.WRITES_REGISTERED);
  }

  /** Commits exactly {@code n} writes from the head; those in {@code failed} are not stored. */
  void commitWrites(int n, BitSet failed) {
    if (n < 0 || n > queue.size()) {
      throw new IllegalArgumentException(
          "cannot commit "
              + n
              + " L3 writes: "
              + queue.size()
              + " are pending; pass 0.."
              + queue.size());
    }
    sink.committedPuts(n);
    for (int i = 0; i < n; i++) {
      L3Write write = queue.poll();
      boolean fail = failed.get(i);
      if (fail) {
        counters.increment(L3Counter.WRITES_FAILED);
      } else {
        counters.increment(L3Counter.WRITES_COMMITTED);
        counters.add(L3Counter.PAGES_WRITTEN, write.pages);
        counters.add(L3Counter.SNAPSHOTS_WRITTEN, write.snapshotNodes.size());
      }
      for (RadixNode node : write.nodes) {
        ledger.account(node, -1);
        node.hostRef--;
        node.pendingL3Write = null;
        node.l3State = fail ? RadixNode.L3_NONE : RadixNode.L3_STORED;
        // The snapshot commits at the same agreed point as the pages it rides with: a put that
        // failed on any rank stores neither on any rank's tree.
        node.l3Snapshot = !fail && write.putsSnapshotOf(node) ? (byte) 1 : (byte) 0;
        ledger.account(node, +1);
        if (!fail) {
          tree.events.stored(CacheMedium.L3, node);
        }
        if (node.invalid != 0) {
          tree.releaseInvalid(node);
        } else {
          tree.keyChanged(node);
        }
      }
    }
  }
}
