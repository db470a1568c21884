package io.kvtier.core.cache;

import java.util.ArrayDeque;

/**
 * The full walk of {@link CacheInvariants#check}: the roots of every namespace, each node once
 * (reachable twice is a violation) against {@link NodeInvariants}, its slots claimed in the
 * run's {@link SlotTally}, its child counts and its lock count, and the node count. The walk
 * adds the tree's pages up by pool category for the {@link PoolInvariants pool check}.
 */
final class TreeInvariants {
  /**
   * What the walk found.
   *
   * @param nodes the non-root nodes
   * @param pages their pages per pool category
   */
  record Status(int nodes, PageSums pages) {}

  private final InvariantRun run;
  private final NodeInvariants rules;
  private final PageSums.Adder pages = new PageSums.Adder();
  private int nodes;

  private TreeInvariants(InvariantRun run) {
    this.run = run;
    this.rules = new NodeInvariants(run);
  }

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  static Status check(InvariantRun run) {
    return new TreeInvariants(run).walk();
  }

  private Status walk() {
    CacheTree tree = run.tree;
    LongMap<RadixNode> roots = tree.roots;
    if (roots.get(0) == null) {
      fail("the root of namespace 0 is missing");
    }
    for (int s = 0; s < roots.slotCount(); s++) {
      RadixNode root = roots.valueAt(s);
      if (root == null) {
        continue;
      }
      if (root.parent != null
          || root.deleted
          || root.namespace != roots.keyAt(s)
          || root.keyLength != 0
          || root.resident()
          || root.hostSlots != null
          || root.depth != 0) {
        fail("bad root for namespace " + roots.keyAt(s) + ": " + root);
      }
      run.seen.put(root, Boolean.TRUE);
      int locks = subtree(root) + run.membership.locksOn(root);
      if (root.lockRef != locks) {
        fail(
            "root of namespace "
                + root.namespace
                + " has lockRef="
                + root.lockRef
                + " but "
                + locks
                + " locks are held in its tree");
      }
    }
    if (nodes != tree.nodeCount) {
      fail("nodeCount=" + tree.nodeCount + " but the tree has " + nodes + " nodes");
    }
    return new Status(nodes, pages.sums());
  }

  /**
   * Checks the subtree below {@code root}; returns the sum of its children's lockRefs. A walk
   * with a stack of its own, in the order of a recursive one (each node's rules, then its
   * children, then its lock count): with a snapshot at every page a tree is as deep as its
   * longest prompt is pages, which overflowed the thread's stack when this recursed.
   */
  private int subtree(RadixNode root) {
    ArrayDeque<Frame> stack = new ArrayDeque<>();
    Frame top = new Frame(root);
    while (true) {
      RadixNode child = top.children.nextChild();
      if (child != null) {
        top.count++;
        if (child.resident()) {
          top.resident++;
        }
        enter(top.node, child);
        stack.push(top);
        top = new Frame(child);
        continue;
      }
      childCounts(top.node, top.count, top.resident);
      if (stack.isEmpty()) {
        return top.lockSum;
      }
      RadixNode n = top.node;
      locks(n, top.lockSum + run.membership.locksOn(n));
      top = stack.pop();
      top.lockSum += n.lockRef;
    }
  }

  /** A node of {@link #subtree}'s walk: where it is in its children, and their sums. */
  private static final class Frame {
    final RadixNode node;
    final SubtreeWalk.Cursor children;
    int count;
    int resident;
    int lockSum;

    Frame(RadixNode node) {
      this.node = node;
      this.children = new SubtreeWalk.Cursor(node);
    }
  }

  /** A node's own checks, before its children's ({@link #subtree}). */
  private void enter(RadixNode p, RadixNode n) {
    nodes++;
    if (run.seen.put(n, Boolean.TRUE) != null) {
      fail(n + " is reachable twice");
    }
    rules.check(p, n);
    run.slots.node(n);
    pages.add(n);
  }

  /** The children counted under {@code parent} against its counters. */
  static void childCounts(RadixNode parent, int children, int resident) {
    if (children != parent.childCount) {
      fail(parent + " has childCount=" + parent.childCount + " but " + children + " children");
    }
    if (resident != parent.residentChildren) {
      fail(
          parent
              + " has residentChildren="
              + parent.residentChildren
              + " but "
              + resident
              + " children on the device");
    }
  }

  /** A node's lockRef against the locks held on it and below it. */
  static void locks(RadixNode n, int locks) {
    if (n.lockRef != locks) {
      fail(
          n + " has lockRef=" + n.lockRef + " but " + locks + " locks are held on it and below it");
    }
  }
}
