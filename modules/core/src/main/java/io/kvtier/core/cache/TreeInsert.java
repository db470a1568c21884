package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * A request's pages into the tree (CACHE.md §3): the insert below the node a request locked, and
 * the hits on its locked path. An insert compares only the tokens past the request's prefix,
 * against nodes other requests added meanwhile; a resident node counts a hit and the request's
 * duplicate pages are freed, an evicted one re-adopts them, and the rest becomes a new leaf whose
 * key is the admission's copy where it covers it ({@link KeyCopy}), else a copy into the tree's
 * key store. Hits are told to the caller's {@link HitListener} (the write triggers), so the tree
 * never calls the rooms built on it.
 */
final class TreeInsert {
  private final CacheTree tree;
  private final PoolLedger ledger;
  private final int pageSize;

  /** The scratch path of {@link #hitPath}; read by no one else. */
  private RadixNode[] hitPath = new RadixNode[32];

  TreeInsert(CacheTree tree, PoolLedger ledger) {
    this.tree = tree;
    this.ledger = ledger;
    this.pageSize = tree.pageSize;
  }

  /**
   * Inserts {@code tokens[pos, end)} below {@code start} (which ends at {@code pos}), with the
   * request's pages from page {@code ownIndex} of {@code own} on (CACHE.md §3). A resident
   * node counts a hit and the request's pages for it are freed as duplicates; an evicted node
   * re-adopts them; the rest becomes a new leaf that adopts them. Stops before an invalid node;
   * {@code out} says where it ended, and pages past it stay the request's.
   *
   * @param knownKey the first-page key of {@code tokens} at {@code knownKeyPos}, which the
   *     admission's walk computed (-1 position: none)
   * @param copy the admission's copy of {@code tokens} past its match, which a new leaf whose key
   *     lies inside it takes as its key; {@link CacheTree#NO_COPY} if {@code tokens} is not the admitted
   *     array
   * @param hits told of every hit counted
   * @param out where the insert ended
   * @return the length (from the root) that was already cached on the device
   */
  int insert(
      RadixNode start,
      int[] tokens,
      int pos,
      int end,
      SlotRuns own,
      int ownIndex,
      int priority,
      long knownKey,
      int knownKeyPos,
      KeyCopy copy,
      HitListener hits,
      InsertResult out) {
    RadixNode node = start;
    int cached = pos;
    boolean residentRun = true;
    boolean stoppedInvalid = false;
    // The key of the page at pos, kept for the new leaf when the lookup finds no child there.
    long key = 0;
    boolean keyAtPos = false;
    while (pos < end) {
      key = pos == knownKeyPos ? knownKey : insertPageKey(tokens, pos, copy);
      keyAtPos = true;
      RadixNode child = ChildMaps.find(node, tokens, pos, key, pageSize);
      if (child == null) {
        break;
      }
      if (child.invalid != 0) {
        stoppedInvalid = true;
        break;
      }
      int length = child.keyLength;
      int compared = Math.min(length, end - pos);
      int m =
          Arrays.mismatch(
              child.keyTokens,
              child.keyOffset,
              child.keyOffset + compared,
              tokens,
              pos,
              pos + compared);
      int matched = m < 0 ? compared : m - m % pageSize;
      if (matched < length) {
        child = tree.split(child, matched);
      }
      int pages = matched / pageSize;
      child.lastAccess = ++tree.clock;
      tree.changed.mark(child);
      if (child.deviceRuns != null) {
        own.release(ledger.devicePool, ownIndex, pages);
        ledger.requestPages -= pages;
        if (residentRun) {
          cached = pos + matched;
        }
        countHit(child, priority, hits);
      } else {
        adopt(child, own, ownIndex);
        residentRun = false;
      }
      tree.keyChanged(child);
      ownIndex += pages;
      pos += matched;
      keyAtPos = false;
      node = child;
      if (matched < length) {
        break;
      }
    }
    if (pos < end && !stoppedInvalid) {
      node =
          newLeaf(
              node,
              tokens,
              pos,
              end,
              own,
              ownIndex,
              priority,
              keyAtPos ? key : insertPageKey(tokens, pos, copy),
              copy,
              hits);
      pos = end;
    }
    out.node = node;
    out.end = pos;
    return cached;
  }

  private void adopt(RadixNode node, SlotRuns own, int ownIndex) {
    ledger.account(node, -1);
    node.deviceRuns = own.slice(ownIndex, node.pageCount);
    node.parent.residentChildren++;
    tree.changed.mark(node.parent);
    ledger.account(node, +1);
    ledger.requestPages -= node.pageCount;
    tree.events.stored(CacheMedium.DEVICE, node);
  }

  /**
   * The first-page key at {@code pos} for an insert: of the request's key copy where the copy
   * holds that page, since a new leaf there keeps the copy's tokens, else of {@code tokens}. The
   * two are the same unless the caller changed the admitted array, against the contract; the key
   * must still be that of the tokens the node keeps.
   */
  private long insertPageKey(int[] tokens, int pos, KeyCopy copy) {
    return copy.covers(pos, pos + pageSize)
        ? tree.firstPageKey(tree.keys.chunk(copy.chunk), copy.offset + pos - copy.from)
        : tree.firstPageKey(tokens, pos);
  }

  /** A new leaf for {@code tokens[pos, end)}, whose first page has the child key {@code key}. */
  private RadixNode newLeaf(
      RadixNode parent,
      int[] tokens,
      int pos,
      int end,
      SlotRuns own,
      int ownIndex,
      int priority,
      long key,
      KeyCopy copy,
      HitListener hits) {
    RadixNode leaf = tree.keyedLeaf(parent, tokens, pos, end, copy);
    leaf.deviceRuns = own.slice(ownIndex, leaf.pageCount);
    leaf.created = leaf.lastAccess = ++tree.clock;
    leaf.priority = priority;
    ChildMaps.add(parent, leaf, key);
    parent.residentChildren++;
    tree.changed.mark(parent);
    tree.nodeCount++;
    ledger.account(leaf, +1);
    ledger.requestPages -= leaf.pageCount;
    tree.events.stored(CacheMedium.DEVICE, leaf);
    countHit(leaf, priority, hits);
    tree.keyChanged(leaf);
    return leaf;
  }

  /** A hit on a resident node: count it, raise its priority, tell the write triggers. */
  private void countHit(RadixNode n, int priority, HitListener hits) {
    tree.changed.mark(n);
    n.hitCount++;
    if (priority > n.priority) {
      n.priority = priority;
    }
    hits.hit(n);
  }

  /**
   * Counts hits on the locked path from the root down to {@code node}, as an insert from the
   * root would, without comparing the tokens again.
   */
  void hitPath(RadixNode node, int priority, HitListener hits) {
    int depth = 0;
    for (RadixNode n = node; n.parent != null; n = n.parent) {
      depth++;
    }
    RadixNode[] path = hitPath;
    if (path.length < depth) {
      path = hitPath = new RadixNode[Integer.highestOneBit(depth) * 2];
    }
    int i = depth;
    for (RadixNode n = node; n.parent != null; n = n.parent) {
      path[--i] = n;
    }
    for (int k = 0; k < depth; k++) {
      RadixNode n = path[k];
      n.lastAccess = ++tree.clock;
      countHit(n, priority, hits);
      tree.keyChanged(n);
    }
  }
}
