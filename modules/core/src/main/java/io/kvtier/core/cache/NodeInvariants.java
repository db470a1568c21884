package io.kvtier.core.cache;

import java.util.Set;

/**
 * The rules of one non-root node against its parent and the queues (CACHE.md §1): its link,
 * deleted flag and namespace, I4 (lengths are page multiples, the node is found under its first
 * page), I1 (device residency is prefix-closed), I2 (evicted implies backed up), I3 and the
 * backup states, its membership of load-backs and L3 writes, the snapshot rules ({@link
 * SnapshotInvariants}) and a live eviction-heap entry for every candidate. Not its children: the
 * walks ({@link TreeInvariants}, {@link ChangedInvariants}) check those.
 */
final class NodeInvariants {
  private final InvariantRun run;
  private final CacheTree tree;
  private final QueueMembership queues;
  private final SnapshotInvariants snapshots;
  private Set<RadixNode> liveDevice;
  private Set<RadixNode> liveHost;

  NodeInvariants(InvariantRun run) {
    this.run = run;
    this.tree = run.tree;
    this.queues = run.membership;
    this.snapshots = new SnapshotInvariants(run.snapshotSlots);
  }

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  void check(RadixNode p, RadixNode n) {
    if (n.parent != p || n.deleted || n.namespace != p.namespace) {
      fail(n + " has a bad parent link, deleted flag or namespace under " + p);
    }
    int pageSize = run.pageSize;
    // I4
    if (n.keyLength <= 0
        || n.keyLength % pageSize != 0
        || n.pageCount * pageSize != n.keyLength
        || n.depth != p.depth + n.keyLength) {
      fail(
          "I4: "
              + n
              + " has keyLength="
              + n.keyLength
              + " pageCount="
              + n.pageCount
              + " depth="
              + n.depth
              + " (pageSize="
              + pageSize
              + ", parent depth="
              + p.depth
              + ")");
    }
    if (n.childKey != tree.firstPageKey(n.keyTokens, n.keyOffset)
        || tree.findChild(p, n.keyTokens, n.keyOffset) != n) {
      fail(n + " is not found under its first page in " + p);
    }
    run.slots.keyView(n.keyChunk, n.keyLength);
    if (n.pageHashes != null && n.pageHashes.length != n.pageCount) {
      fail(n + " has " + n.pageHashes.length + " page hashes for " + n.pageCount + " pages");
    }
    boolean resident = n.resident();
    boolean parentRoot = p.parent == null;
    // I1
    if (resident && !parentRoot && !p.resident()) {
      fail("I1: " + n + " is on the device but its parent " + p + " is not");
    }
    // I2
    if (!resident && (n.hostSlots == null || n.backupState != BackupState.COMMITTED)) {
      fail("I2: " + n + " is evicted from the device without a committed backup");
    }
    backup(p, n, parentRoot);
    if (n.pendingLoad != null && (!resident || queues.loadOf.get(n) != n.pendingLoad)) {
      fail(n + " names a load it is not part of, or is not resident: " + n.pendingLoad);
    }
    if (n.pendingLoad == null && queues.loadOf.containsKey(n)) {
      fail(n + " is in pending load " + queues.loadOf.get(n) + " but does not name it");
    }
    snapshots.l3(n);
    l3Write(n);
    snapshots.node(n);
    if (CacheTree.isDeviceCandidate(n) && !liveDevice().contains(n)) {
      fail(n + " is a device eviction candidate without a live heap entry");
    }
    if (CacheTree.isHostCandidate(n) && !liveHost().contains(n)) {
      fail(n + " is a host eviction candidate without a live heap entry");
    }
  }

  /** A node's pending L3 write: named, listed, WRITING, and its host copy protected by hostRef. */
  private void l3Write(RadixNode n) {
    if (n.hostRef != (n.pendingL3Write != null ? 1 : 0)) {
      fail(
          n
              + " has hostRef="
              + n.hostRef
              + " but "
              + (n.pendingL3Write != null ? "one" : "no")
              + " L3 write reads its host copy");
    }
    if (n.pendingL3Write != null
        && (queues.l3WriteOf.get(n) != n.pendingL3Write
            || n.l3State != RadixNode.L3_WRITING
            || n.backupState != BackupState.COMMITTED
            || n.hostSlots == null)) {
      fail(
          n
              + " names L3 write "
              + n.pendingL3Write
              + " but is not in it, not WRITING or"
              + " has no committed host copy");
    }
    if (n.pendingL3Write == null
        && (queues.l3WriteOf.containsKey(n) || n.l3State == RadixNode.L3_WRITING)) {
      fail(n + " is in an L3 write or WRITING without naming the write");
    }
  }

  /** The backup state machine of a node, and I3 (host copies are prefix-closed). */
  private void backup(RadixNode p, RadixNode n, boolean parentRoot) {
    switch (n.backupState) {
      case NONE -> {
        if (n.hostSlots != null || n.pendingWrite != null || n.evictAfterBackup) {
          fail(n + " is NONE but has host slots, a pending write or a write-back flag");
        }
      }
      case PENDING -> {
        if (n.hostSlots == null
            || n.pendingWrite == null
            || queues.ackOf.get(n) != n.pendingWrite) {
          fail(n + " is PENDING without host slots or outside its write ack");
        }
      }
      case COMMITTED -> {
        if (n.hostSlots == null || n.pendingWrite != null || n.evictAfterBackup) {
          fail(n + " is COMMITTED without host slots or with a pending write");
        }
        // I3 for visible copies: a committed backup's parent is committed.
        if (!parentRoot && p.backupState != BackupState.COMMITTED) {
          fail("I3: " + n + " has a committed backup but its parent " + p + " does not");
        }
      }
      default -> fail("unknown state " + n.backupState);
    }
    if (n.backupState != BackupState.PENDING && queues.ackOf.containsKey(n)) {
      fail(n + " is in write ack " + queues.ackOf.get(n).sequence + " but not PENDING");
    }
    // I3 at registration: a pending backup was registered below a backed-up parent; it may
    // have lost it since (a failed parent copy), and then rolls back at its own commit.
    if (n.hostSlots != null
        && !parentRoot
        && p.hostSlots == null
        && n.backupState != BackupState.PENDING) {
      fail("I3: " + n + " is backed up but its parent " + p + " is not");
    }
  }

  private Set<RadixNode> liveDevice() {
    if (liveDevice == null) {
      liveDevice = tree.deviceHeap.liveNodes();
    }
    return liveDevice;
  }

  private Set<RadixNode> liveHost() {
    if (liveHost == null) {
      liveHost = tree.hostHeap.liveNodes();
    }
    return liveHost;
  }
}
