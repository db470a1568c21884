package io.kvtier.core.cache;

/**
 * The sums over the tree that the incremental check carries from one full check to the next
 * (in {@link ChangedNodes}): the node count and the pages per pool category, each node counted
 * at its state when last looked at ({@link RadixNode#keptEpoch}).
 */
final class KeptSums {
  private KeptSums() {}

  /** Moves a marked node's pool categories and count in the sums kept since the full check. */
  static void keep(ChangedNodes changed, RadixNode n) {
    if (n.keptEpoch == changed.keptEpoch) {
      changed.keptNodes--;
      changed.keptDevice(n.keptDevicePages, -1);
      changed.keptHost(n.keptHostPages, -1);
    }
    n.keptEpoch = 0;
    n.keptDevicePages = 0;
    n.keptHostPages = 0;
    if (!n.deleted && n.parent != null) {
      keepNode(changed, n);
    }
  }

  /** Counts a node of the tree in the kept sums. */
  private static void keepNode(ChangedNodes changed, RadixNode n) {
    n.keptEpoch = changed.keptEpoch;
    n.keptDevicePages = PageSums.devicePages(n);
    n.keptHostPages = PageSums.hostPages(n);
    changed.keptNodes++;
    changed.keptDevice(n.keptDevicePages, +1);
    changed.keptHost(n.keptHostPages, +1);
  }

  /**
   * After a full check that passed: the sums it found become the kept sums, every node of the
   * tree is counted in them, and the incremental check starts (again) from here.
   */
  static void restart(InvariantRun run) {
    ChangedNodes changed = run.tree.changed;
    changed.keptEpoch++;
    changed.keptNodes = 0;
    changed.keptDeviceEvictable = 0;
    changed.keptDeviceProtected = 0;
    changed.keptHostEvictable = 0;
    changed.keptHostProtected = 0;
    for (RadixNode n : run.seen.keySet()) {
      if (n.parent != null) {
        keepNode(changed, n);
      }
    }
    changed.clearCheck();
    changed.startCheck();
  }
}
