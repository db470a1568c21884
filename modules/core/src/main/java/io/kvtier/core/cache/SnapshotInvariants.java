package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * I7 and I8 (HYBRID.md §6, §7): where recurrent-state snapshots may be on a node, what L3 holds
 * of them, and that a request resumes from its locked node's snapshot.
 */
final class SnapshotInvariants {
  private final int snapshotSlots;

  SnapshotInvariants(int snapshotSlots) {
    this.snapshotSlots = snapshotSlots;
  }

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  /**
   * I7 (HYBRID.md §7): a device snapshot only on a resident node, a host snapshot only with host
   * slots and in the node's backup state, each of {@code kvtier.snapshot-slots} slots (a
   * snapshot is at its node's end by construction: a split leaves it to the lower half); a
   * node whose backup registered with a device snapshot (PENDING or COMMITTED with one) has
   * the host snapshot of that backup, so that a demotion keeps it matchable.
   */
  void node(RadixNode n) {
    if (n.stateSlots == null && n.hostStateSlots == null) {
      return;
    }
    if (snapshotSlots == 0) {
      fail("I7: " + n + " has a snapshot but kvtier.snapshot-slots=0");
    }
    if (n.stateSlots != null && (!n.resident() || n.stateSlots.length != snapshotSlots)) {
      fail(
          "I7: "
              + n
              + " has a device snapshot of "
              + n.stateSlots.length
              + " slots "
              + (n.resident() ? "" : "but is not on the device"));
    }
    if (n.hostStateSlots != null
        && (n.hostSlots == null
            || n.backupState == BackupState.NONE
            || n.hostStateSlots.length != snapshotSlots)) {
      fail(
          "I7: "
              + n
              + " has a host snapshot of "
              + n.hostStateSlots.length
              + " slots without a host copy in its backup state");
    }
    if (n.stateSlots != null
        && n.backupState != BackupState.NONE
        && n.hostSlots != null
        && n.hostStateSlots == null) {
      fail("I7: " + n + " is backed up with a device snapshot but has no host snapshot");
    }
  }

  /**
   * The L3 part of I7 (HYBRID.md §6): the L3 snapshot bit only on a node whose pages L3 holds
   * and that keeps the host snapshot L3 got (a split's upper half has neither), and only with
   * snapshots; a pending L3 write puts the snapshot of a node it covers and that
   * has a host snapshot for the put to read (protected with the pages by the write's hostRef).
   * That a prefetched snapshot is counted once is the slot claim: the node's host snapshot is
   * claimed by the node, the prefetch's held slots by the prefetch.
   */
  void l3(RadixNode n) {
    if (n.l3Snapshot != 0
        && (n.l3Snapshot != 1
            || n.l3State != RadixNode.L3_STORED
            || n.hostStateSlots == null
            || snapshotSlots == 0)) {
      fail(
          "I7: "
              + n
              + " has l3Snapshot="
              + n.l3Snapshot
              + " but its pages are not stored in L3 (l3State="
              + n.l3State
              + "), it has no host snapshot (the one L3 got) or there are no snapshots"
              + " (kvtier.snapshot-slots="
              + snapshotSlots
              + ")");
    }
    L3Write write = n.pendingL3Write;
    if (write != null && write.putsSnapshotOf(n) && n.hostStateSlots == null) {
      fail("I7: " + write + " puts the snapshot of " + n + ", which has no host snapshot");
    }
  }

  /**
   * A request's snapshot slots are its own (claimed and counted as request pages) and it
   * resumes from its locked node's device snapshot (I8: the usable end has a snapshot).
   *
   * @return the device pages the request's snapshots and tail hold
   */
  long request(RequestState r, SlotTally slots) {
    long pages = 0;
    for (int i = 0; i < r.snapshotCount; i++) {
      int[] held = r.snapshotSlots[i];
      if (held == null
          || held.length != snapshotSlots
          || r.snapshotPositions[i] <= r.prefixLength) {
        fail(
            "request "
                + r.id
                + " holds a snapshot at "
                + r.snapshotPositions[i]
                + " not past its prefix of "
                + r.prefixLength
                + " or of the wrong size");
      }
      for (int slot : held) {
        slots.device(slot, "request " + r.id + " (snapshot)");
      }
      pages += held.length;
    }
    if (r.tailSlots != null) {
      for (int slot : r.tailSlots) {
        slots.device(slot, "request " + r.id + " (tail)");
      }
      pages += r.tailSlots.length;
    }
    if (r.resumeSlots.length > 0
        && (r.lockNode.stateSlots == null
            || !Arrays.equals(r.resumeSlots, r.lockNode.stateSlots))) {
      fail(
          "I8: request "
              + r.id
              + " resumes from snapshot slots "
              + Arrays.toString(r.resumeSlots)
              + " that are not its locked node's "
              + r.lockNode);
    }
    return pages;
  }
}
