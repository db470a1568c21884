package io.kvtier.core.cache;

/**
 * The tree's pages per pool and category (evictable or protected), as the ledger keeps them:
 * what the full walk adds up node by node, or what {@link KeptSums} carries from the last full
 * check for the incremental one.
 *
 * @param deviceEvictable device pages of nodes eviction may take
 * @param deviceProtected device pages of locked, pending or invalid nodes
 * @param hostEvictable host pages of host-only leaves eviction may take
 * @param hostProtected the other host pages of the tree
 */
record PageSums(
    long deviceEvictable, long deviceProtected, long hostEvictable, long hostProtected) {

  /** The node's device pages: positive if evictable, negative if protected, 0 if none. */
  static int devicePages(RadixNode n) {
    if (!n.resident()) {
      return 0;
    }
    int pages = n.pageCount + (n.stateSlots == null ? 0 : n.stateSlots.length);
    return n.lockRef == 0 && n.backupState != BackupState.PENDING && n.invalid == 0
        ? pages
        : -pages;
  }

  /** The node's host pages: positive if evictable, negative if protected, 0 if none. */
  static int hostPages(RadixNode n) {
    if (n.hostSlots == null) {
      return 0;
    }
    int pages = n.pageCount + (n.hostStateSlots == null ? 0 : n.hostStateSlots.length);
    return !n.resident()
            && n.lockRef == 0
            && n.hostRef == 0
            && n.backupState == BackupState.COMMITTED
            && n.invalid == 0
        ? pages
        : -pages;
  }

  /** The sums the last full check kept, as updated by the nodes marked since. */
  static PageSums kept(ChangedNodes changed) {
    return new PageSums(
        changed.keptDeviceEvictable,
        changed.keptDeviceProtected,
        changed.keptHostEvictable,
        changed.keptHostProtected);
  }

  /** Adds nodes' pages up, by category. */
  static final class Adder {
    private long deviceEvictable;
    private long deviceProtected;
    private long hostEvictable;
    private long hostProtected;

    void add(RadixNode n) {
      int device = devicePages(n);
      if (device > 0) {
        deviceEvictable += device;
      } else {
        deviceProtected -= device;
      }
      int host = hostPages(n);
      if (host > 0) {
        hostEvictable += host;
      } else {
        hostProtected -= host;
      }
    }

    PageSums sums() {
      return new PageSums(deviceEvictable, deviceProtected, hostEvictable, hostProtected);
    }
  }
}
