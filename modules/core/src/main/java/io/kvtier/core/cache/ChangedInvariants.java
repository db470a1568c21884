package io.kvtier.core.cache;

/**
 * The incremental walk of {@link CacheInvariants#checkChanged}: every node marked in {@link
 * ChangedNodes} (and its parent) against the rules of a node ({@link NodeInvariants}), its
 * slots, its children seen from its side (links, I1 and I3, counts) and its lock count; the node
 * count and pool sums kept since the last full check ({@link KeptSums}), updated by the marks.
 */
final class ChangedInvariants {
  private final InvariantRun run;
  private final NodeInvariants rules;

  private ChangedInvariants(InvariantRun run) {
    this.run = run;
    this.rules = new NodeInvariants(run);
  }

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  /**
   * Checks the marked nodes and moves them in the kept sums.
   *
   * @return the tree's pages per pool category, as kept
   */
  static PageSums check(InvariantRun run) {
    return new ChangedInvariants(run).walk();
  }

  private PageSums walk() {
    CacheTree tree = run.tree;
    ChangedNodes changed = tree.changed;
    RadixNode[] marked = changed.checkNodes();
    int count = changed.checkCount();
    for (int i = 0; i < count; i++) {
      RadixNode n = marked[i];
      KeptSums.keep(changed, n);
      if (!n.deleted) {
        run.seen.put(n, Boolean.TRUE);
        if (n.parent != null) {
          run.seen.put(n.parent, Boolean.TRUE);
        }
      }
    }
    for (RadixNode n : run.seen.keySet()) {
      node(n);
    }
    if (tree.roots.get(0) == null) {
      fail("the root of namespace 0 is missing");
    }
    if (changed.keptNodes != tree.nodeCount) {
      fail(
          "nodeCount="
              + tree.nodeCount
              + " but the nodes counted since the last full check make "
              + changed.keptNodes);
    }
    return PageSums.kept(changed);
  }

  /** A marked node (or a marked node's parent) that is not deleted. */
  private void node(RadixNode n) {
    RadixNode p = n.parent;
    if (p == null) {
      if (run.tree.roots.get(n.namespace) != n
          || n.keyLength != 0
          || n.resident()
          || n.hostSlots != null
          || n.depth != 0) {
        fail("bad root for namespace " + n.namespace + ": " + n);
      }
    } else {
      if (!run.inTree(n)) {
        fail(n + " is not in the tree: a parent is deleted or does not list it");
      }
      rules.check(p, n);
      run.slots.node(n);
    }
    TreeInvariants.locks(n, children(n) + run.membership.locksOn(n));
  }

  /**
   * The children of {@code parent} against its counts and against it (links, I1 and I3 seen
   * from the parent's side); returns the sum of their lockRefs.
   */
  private static int children(RadixNode parent) {
    int lockSum = 0;
    int children = 0;
    int resident = 0;
    boolean root = parent.parent == null;
    LongMap<RadixNode> map = parent.children;
    if (map != null) {
      for (int s = 0; s < map.slotCount(); s++) {
        for (RadixNode c = map.valueAt(s); c != null; c = c.sameKeyNext) {
          children++;
          if (c.parent != parent || c.deleted || c.namespace != parent.namespace) {
            fail(c + " has a bad parent link, deleted flag or namespace under " + parent);
          }
          if (c.resident()) {
            resident++;
            if (!root && !parent.resident()) {
              fail("I1: " + c + " is on the device but its parent " + parent + " is not");
            }
          }
          if (!root
              && c.backupState == BackupState.COMMITTED
              && parent.backupState != BackupState.COMMITTED) {
            fail("I3: " + c + " has a committed backup but its parent " + parent + " does not");
          }
          if (!root
              && c.hostSlots != null
              && parent.hostSlots == null
              && c.backupState != BackupState.PENDING) {
            fail("I3: " + c + " is backed up but its parent " + parent + " is not");
          }
          lockSum += c.lockRef;
        }
      }
    }
    TreeInvariants.childCounts(parent, children, resident);
    return lockSum;
  }
}
