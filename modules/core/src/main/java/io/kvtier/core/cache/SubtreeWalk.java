package io.kvtier.core.cache;

import java.util.ArrayDeque;

/**
 * Depth-first walks of a subtree with a stack of their own, in the order of a recursive walk:
 * each node's children in their map's slot order, then along each slot's same-key chain, a
 * node's {@code pre} before its children and its {@code post} after them. Why not recursion: with
 * a snapshot at every page a tree is as deep as its longest prompt is pages (thousands), which
 * overflows a thread's stack, and how deep a stack goes may differ between ranks (the JIT inlines
 * differently), so a replicated decision must never depend on it.
 */
final class SubtreeWalk {
  private SubtreeWalk() {}

  /** Told each node of a walk. */
  interface Visitor {
    /** Before the node's children. */
    default void pre(RadixNode n) {}

    /** After the node's children. */
    default void post(RadixNode n) {}
  }

  /** Where a walk is in one node's children. */
  static final class Cursor {
    final RadixNode node;
    private int slot;
    private RadixNode chain;

    Cursor(RadixNode node) {
      this.node = node;
    }

    /**
     * The node's next child in the walk's order.
     *
     * @return the child, or null after the last
     */
    RadixNode nextChild() {
      LongMap<RadixNode> map = node.children;
      if (map == null) {
        return null;
      }
      if (chain != null) {
        chain = chain.sameKeyNext;
        if (chain != null) {
          return chain;
        }
      }
      while (slot < map.slotCount()) {
        RadixNode v = map.valueAt(slot++);
        if (v != null) {
          chain = v;
          return v;
        }
      }
      return null;
    }
  }

  /**
   * Walks the nodes below {@code top}, and {@code top} itself if {@code withTop}.
   *
   * @param top the subtree's top
   * @param withTop whether {@code top} is visited too (first {@code pre}, last {@code post})
   * @param visitor told each node
   */
  static void walk(RadixNode top, boolean withTop, Visitor visitor) {
    if (withTop) {
      visitor.pre(top);
    }
    ArrayDeque<Cursor> stack = new ArrayDeque<>();
    Cursor at = new Cursor(top);
    while (true) {
      RadixNode child = at.nextChild();
      if (child != null) {
        visitor.pre(child);
        stack.push(at);
        at = new Cursor(child);
        continue;
      }
      if (stack.isEmpty()) {
        break;
      }
      visitor.post(at.node);
      at = stack.pop();
    }
    if (withTop) {
      visitor.post(top);
    }
  }
}
