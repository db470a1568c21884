package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * A match's walk down the tree (CACHE.md §2) and what it found, owned by its caller and refilled
 * by every walk, so that a walk allocates nothing: the nodes matched whole (then, after {@link
 * #complete}, the upper half of the node matched in part), that node and how much of it matched,
 * and where a lookup found no child with the first-page key it computed there.
 */
final class TreeWalk {
  /** Ints per 4 KiB page, the stride of {@link #touchPages}. */
  private static final int TOUCH_STRIDE = 1024;

  private final CacheTree tree;

  /** Where {@link #touchPages} leaves what it read; never read. */
  @SuppressWarnings("unused")
  private int touchSink;

  /** The nodes passed, from the top; {@code path[0, pathLength)} is valid. */
  RadixNode[] path = new RadixNode[32];

  int pathLength;

  /** The node matched in part, split by {@link #complete}; or null. */
  RadixNode partialNode;

  /** The tokens of {@link #partialNode} that matched, a positive multiple of the page size. */
  int partialMatched;

  /**
   * The first-page key of the tokens at {@link #missPos}, where a lookup found no child (-1:
   * none). A request keeps it for its insert, which looks up the same page first: at page size
   * 64 a key costs about 13 ns, and a request would compute it twice.
   */
  long missKey;

  int missPos = -1;

  TreeWalk(CacheTree tree) {
    this.tree = tree;
  }

  /**
   * Walks {@code tokens[pos, end)} down from {@code from} without changing the tree: the nodes
   * matched whole land in {@link #path}, a node matched in part (page-aligned) is kept in
   * this walk for {@link #complete}, which splits it and touches every node passed. Stops
   * before an invalid node. Two steps so that the caller can check the tokens past the match in
   * between and reject a bad request before the walk leaves any trace (a split, new access
   * stamps): the tokens that matched are the tree's own and were checked when they were inserted,
   * so only the rest needs a check, and the prompt's cold first read is not paid twice (about 9%
   * of a shared-prefix request at page 16 and 64).
   *
   * @param end page-aligned
   * @return the position reached, the partly matched node's matched pages included
   */
  int walk(RadixNode from, int[] tokens, int pos, int end) {
    touchPages(tokens, pos, end);
    pathLength = 0;
    partialNode = null;
    missPos = -1;
    RadixNode node = from;
    while (pos < end) {
      if (node.children == null) {
        break;
      }
      long key = tree.firstPageKey(tokens, pos);
      RadixNode child = ChildMaps.find(node, tokens, pos, key, tree.pageSize);
      if (child == null) {
        missKey = key;
        missPos = pos;
        break;
      }
      if (child.invalid != 0) {
        break;
      }
      int length = child.keyLength;
      int compared = Math.min(length, end - pos);
      touchPages(child.keyTokens, child.keyOffset, child.keyOffset + compared);
      int m =
          Arrays.mismatch(
              child.keyTokens,
              child.keyOffset,
              child.keyOffset + compared,
              tokens,
              pos,
              pos + compared);
      int matched = m < 0 ? compared : m - m % tree.pageSize;
      pos += matched;
      if (matched < length) {
        partialNode = child;
        partialMatched = matched;
        break;
      }
      add(child);
      node = child;
    }
    return pos;
  }

  /**
   * Reads one int of every 4 KiB of {@code a[from, to)} past the first, ahead of a pass that
   * reads them all in order. Why: the prompt and the tree's keys are mostly in memory no cache
   * holds, and a sequential pass pays each 4 KiB page's TLB miss and the hardware prefetcher's
   * restart (it stops at page boundaries) one page after another; these loads are independent,
   * so they are in flight together and the pass finds every page started (up to 6% of a
   * shared-prefix request; docs/PERFORMANCE.md). The loads' result goes to a field so that the
   * JIT keeps them.
   */
  private void touchPages(int[] a, int from, int to) {
    int t = 0;
    for (int i = from + TOUCH_STRIDE; i < to; i += TOUCH_STRIDE) {
      t |= a[i];
    }
    touchSink = t;
  }

  /**
   * The changes of the last {@link #walk}: touches the nodes matched whole,
   * in order, then splits the node matched in part and touches its new upper half, which joins
   * the path; the same changes, in the same order, as a walk that made them on its way down.
   */
  void complete() {
    int whole = pathLength;
    for (int i = 0; i < whole; i++) {
      tree.touch(path[i]);
    }
    if (partialNode != null) {
      RadixNode top = tree.split(partialNode, partialMatched);
      partialNode = null;
      tree.touch(top);
      add(top);
    }
  }

  void add(RadixNode n) {
    if (pathLength == path.length) {
      path = Arrays.copyOf(path, pathLength * 2);
    }
    path[pathLength++] = n;
  }
}
