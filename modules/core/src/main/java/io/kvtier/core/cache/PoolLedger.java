package io.kvtier.core.cache;

/**
 * The pool accounting of one rank: the device (L1) and host (L2) page allocators and the counts
 * that keep free + evictable + protected = capacity per pool without rescans (CACHE.md §1,
 * I5). The tree brackets every change of a field that decides a node's pool category (slots,
 * lockRef, hostRef, backup state, invalid) with {@code account(n, -1)} and {@code account(n,
 * +1)}; the rooms that hold pages outside the tree (a request's own pages, pages awaiting
 * write-back, host slots reserved by prepared backups and L3 prefetches) count them here.
 *
 * <p>Replicated: every count moves at replicated points only, and the allocators are
 * deterministic, so the occupancy is the same on every rank.
 */
final class PoolLedger {
  final PageAllocator devicePool;
  final PageAllocator hostPool;

  long deviceEvictable;
  long deviceProtected;

  /** Device pages that requests allocated and the tree has not taken yet. */
  long requestPages;

  long hostEvictable;
  long hostProtected;

  /** Pages of write-back victims whose backup is pending: freed at their commit. */
  long writeBackPages;

  /**
   * Host pages held outside the tree: reserved by prepared backups or L3 prefetches, or retired
   * by rolled-back prepared backups until their retirement ack commits.
   */
  long reservedHostPages;

  /** The nodes changed since the incremental digest and check looked; the tree shares it. */
  final ChangedNodes changed = new ChangedNodes();

  PoolLedger(int devicePages, int hostPages) {
    this.devicePool = new PageAllocator("device", devicePages);
    this.hostPool = new PageAllocator("host", hostPages);
  }

  /** Adds ({@code sign} +1) or removes (-1) a node's pages to or from its pool categories. */
  void account(RadixNode n, int sign) {
    changed.mark(n);
    if (n.deviceRuns != null) {
      int pages = n.stateSlots == null ? n.pageCount : n.pageCount + n.stateSlots.length;
      if (n.lockRef == 0 && n.backupState != BackupState.PENDING && n.invalid == 0) {
        deviceEvictable += sign * pages;
      } else {
        deviceProtected += sign * pages;
      }
    }
    if (n.hostSlots != null) {
      int pages = n.hostStateSlots == null ? n.pageCount : n.pageCount + n.hostStateSlots.length;
      if (n.deviceRuns == null
          && n.lockRef == 0
          && n.hostRef == 0
          && n.backupState == BackupState.COMMITTED
          && n.invalid == 0) {
        hostEvictable += sign * pages;
      } else {
        hostProtected += sign * pages;
      }
    }
  }

  /**
   * The device pool's accounting, request pages and released pages that a copy in flight still
   * reads ({@link PageAllocator#deferred}) counted as protected.
   */
  PoolUsage deviceUsage() {
    return new PoolUsage(
        devicePool.capacity(),
        devicePool.free(),
        (int) deviceEvictable,
        (int) (deviceProtected + requestPages + devicePool.deferred()));
  }

  /** The host pool's accounting, reserved pages counted as protected. */
  PoolUsage hostUsage() {
    return new PoolUsage(
        hostPool.capacity(),
        hostPool.free(),
        (int) hostEvictable,
        (int) (hostProtected + reservedHostPages));
  }

  /** The failure of a device allocation of {@code pages} with {@code free} pages left. */
  PoolExhaustedException deviceExhausted(int pages, int free) {
    return new PoolExhaustedException(
        "device", pages, free, (int) (deviceProtected + requestPages), (int) writeBackPages);
  }
}
