package io.kvtier.core.cache;

/**
 * What {@link CacheTree#walk} found, owned by its caller and refilled by every walk, so that a
 * walk allocates nothing: the nodes matched whole (then, after {@link CacheTree#completeWalk},
 * the upper half of the node matched in part), that node and how much of it matched, and where a
 * lookup found no child with the first-page key it computed there.
 */
final class TreeWalk {
  /** The nodes passed, from the top; {@code path[0, pathLength)} is valid. */
  RadixNode[] path = new RadixNode[32];

  int pathLength;

  /** The node matched in part, split by {@link CacheTree#completeWalk}; or null. */
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

  void add(RadixNode n) {
    if (pathLength == path.length) {
      path = java.util.Arrays.copyOf(path, pathLength * 2);
    }
    path[pathLength++] = n;
  }
}
