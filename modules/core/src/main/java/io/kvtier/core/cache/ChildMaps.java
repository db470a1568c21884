package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * The child maps of tree nodes: a node's children sit in a {@link LongMap} under the key of
 * their first page ({@link CacheTree#firstPageKey}), and children whose first pages share a key
 * are chained through {@link RadixNode#sameKeyNext}; a lookup verifies the page. Static, so that
 * the walk calls them without an object in between.
 */
final class ChildMaps {
  private ChildMaps() {}

  /**
   * Odd multipliers for {@link CacheTree#firstPageKey}, the same on every rank (a fixed seed).
   */
  static int[] pageMultipliers(int pageSize) {
    int[] m = new int[pageSize];
    long state = 0x6B76_7469_6572_4B45L;
    for (int i = 0; i < pageSize; i++) {
      state += 0x9E3779B97F4A7C15L;
      long z = state;
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      m[i] = (int) (z ^ (z >>> 31)) | 1;
    }
    return m;
  }

  /**
   * The child of {@code node} whose key starts with the page {@code tokens[pos, pos +
   * pageSize)}, whose first-page key is {@code key}; null if none.
   */
  static RadixNode find(RadixNode node, int[] tokens, int pos, long key, int pageSize) {
    LongMap<RadixNode> children = node.children;
    if (children == null) {
      return null;
    }
    if (pageSize == 1) {
      return children.get(key);
    }
    RadixNode c = children.get(key);
    while (c != null
        && Arrays.mismatch(
                c.keyTokens, c.keyOffset, c.keyOffset + pageSize, tokens, pos, pos + pageSize)
            >= 0) {
      c = c.sameKeyNext;
    }
    return c;
  }

  /** Links {@code child} below {@code parent} under its first-page key {@code key}. */
  static void add(RadixNode parent, RadixNode child, long key) {
    child.childKey = key;
    child.parent = parent;
    if (parent.children == null) {
      parent.children = new LongMap<>(2);
    }
    RadixNode head = parent.children.get(key);
    if (head == null) {
      parent.children.put(key, child);
    } else {
      // Two first pages with one 64-bit hash: chain them; lookups verify the page.
      child.sameKeyNext = head.sameKeyNext;
      head.sameKeyNext = child;
    }
    parent.childCount++;
  }

  /** Unlinks {@code child} from {@code parent}. */
  static void remove(RadixNode parent, RadixNode child) {
    long key = child.childKey;
    RadixNode head = parent.children.get(key);
    if (head == child) {
      if (child.sameKeyNext == null) {
        parent.children.remove(key);
      } else {
        parent.children.put(key, child.sameKeyNext);
      }
    } else {
      RadixNode p = head;
      while (p.sameKeyNext != child) {
        p = p.sameKeyNext;
      }
      p.sameKeyNext = child.sameKeyNext;
    }
    child.sameKeyNext = null;
    parent.childCount--;
  }

  /** Puts {@code replacement} where {@code old} was below {@code parent}, same key. */
  static void replace(RadixNode parent, RadixNode old, RadixNode replacement) {
    long key = old.childKey;
    replacement.childKey = key;
    replacement.parent = parent;
    replacement.sameKeyNext = old.sameKeyNext;
    RadixNode head = parent.children.get(key);
    if (head == old) {
      parent.children.put(key, replacement);
    } else {
      RadixNode p = head;
      while (p.sameKeyNext != old) {
        p = p.sameKeyNext;
      }
      p.sameKeyNext = replacement;
    }
    old.sameKeyNext = null;
  }
}
