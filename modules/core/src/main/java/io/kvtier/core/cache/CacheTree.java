package io.kvtier.core.cache;

import io.kvtier.core.config.EvictionPolicy;
import java.util.ArrayList;
import java.util.Arrays;

/**
 * The paged radix tree of one rank with its two page pools and the per-pool accounting.
 *
 * <p>Design note (hot path): a request reads its prompt once, at admission: the matched part in
 * {@link Arrays#mismatch} passes against the tree's keys, the rest in one copy into the key store
 * that the insert takes as the new leaf's key ({@link KeyCopy}; an insert that meets nodes other
 * requests added meanwhile compares those too); everything else is per node, not per token.
 * Keys and host slots are views ({@code array, offset}) so splits copy nothing. Children are
 * found by their first token (page size 1) or a vectorized hash of their first page (verified,
 * with a collision chain) in a {@link LongMap}. Finish inserts from the node the request locked
 * at admission, so the already matched prefix is not compared again. Page hashes are computed on
 * demand only. Memory the collector would have to supply fresh is what a full cache pays for
 * most: a new leaf's key goes to a reused chunk of a {@link ChunkStore} (multiturn replay at page
 * size 16: 0.55 us per request against 0.93 with a fresh key array). Device slots move as runs of
 * consecutive slots ({@link SlotRuns}): the allocator appends runs to the request, a node takes
 * a slice of them, eviction frees them a run at a time, and no slot is written one by one unless
 * a page table is asked for (about a third of the request's time at page size 1 when they were
 * an int per page). The figures are in docs/PERFORMANCE.md, "Notes moved from the engine's
 * comments".
 *
 * <p>Accounting: every mutation of a field that decides a node's pool category (slots, lockRef,
 * backup state, invalid) is bracketed by {@code ledger.account(n, -1)} and {@code +1} (see {@link
 * PoolLedger}). Every transition that can make a node an eviction candidate, or change its key
 * while it is one, pushes it onto the tier's {@link EvictionHeap}. Only replicated state (tree,
 * locks, logical clock, backup state) enters these decisions. Inputs and outputs of a call are
 * its arguments, its result and the caller's holders ({@link TreeWalk}, {@link InsertResult});
 * hits are told to the caller's {@link HitListener}, so the tree never calls the rooms built on
 * it. Not thread-safe: one scheduler thread owns the cache.
 */
final class CacheTree {
  final int pageSize;

  /** Where the rooms report what enters and leaves each medium (KV events). */
  final CacheEvents events;

  final EvictionPolicy policy;
  private final boolean touchRepushes;
  private final PoolLedger ledger;

  /** The ledger's {@link ChangedNodes}: the tree marks what {@link PoolLedger#account} does not. */
  final ChangedNodes changed;

  /** The ledger's pools, held here too so that the insert reaches them in one load. */
  private final PageAllocator devicePool;

  private final PageAllocator hostPool;
  final EvictionHeap deviceHeap;
  final EvictionHeap hostHeap;
  final LongMap<RadixNode> roots = new LongMap<>(4);

  /** Masks page hashes; tests set it to 0 to force every first page into one collision chain. */
  long pageKeyMask = -1L;

  long clock;
  private long nextId;
  int nodeCount;

  private final int[] pageMultipliers;

  /** Where new leaves keep their keys. */
  final ChunkStore keys = new ChunkStore();

  /**
   * The child maps of deleted nodes, for the top half of a split: three objects less per split
   * from memory no cache holds. Only an empty map of the size a new map has is reused, so that
   * it orders its entries as a new one would. Only splits take them: handing them to every node
   * that gets its first child made the multiturn replay 2-3% slower (docs/PERFORMANCE.md).
   */
  private final LongMap<RadixNode>[] spareMaps = newMapArray(64);

  private int spareMapCount;

  /** Broken variants for the regression proofs; all off outside them. */
  private final RuleVariants rules;

  /** The key copy of an insert that has none: covers nothing. */
  static final KeyCopy NO_COPY = new KeyCopy();

  CacheTree(
      int pageSize,
      EvictionPolicy policy,
      PoolLedger ledger,
      CacheEvents events,
      RuleVariants rules) {
    this.rules = rules;
    this.pageSize = pageSize;
    this.events = events;
    this.policy = policy;
    this.touchRepushes = EvictionHeap.readsAccessClock(policy);
    this.ledger = ledger;
    this.changed = ledger.changed;
    this.devicePool = ledger.devicePool;
    this.hostPool = ledger.hostPool;
    this.pageMultipliers = ChildMaps.pageMultipliers(pageSize);
    this.deviceHeap = new EvictionHeap(policy, false);
    this.hostHeap = new EvictionHeap(policy, true);
    rootFor(0, true);
  }

  /** The table size of {@code new LongMap<>(2)}, the only size {@link #spareMaps} keeps. */
  private static final int NEW_MAP_SLOTS = new LongMap<RadixNode>(2).slotCount();

  @SuppressWarnings("unchecked")
  private static LongMap<RadixNode>[] newMapArray(int n) {
    return (LongMap<RadixNode>[]) new LongMap<?>[n];
  }

  RadixNode rootFor(long namespace, boolean create) {
    RadixNode root = roots.get(namespace);
    if (root == null && create) {
      root = new RadixNode(nextId++, namespace);
      root.keyTokens = new int[0];
      root.created = root.lastAccess = ++clock;
      roots.put(namespace, root);
      changed.mark(root);
    }
    return root;
  }

  /** The id the next node will get (replicated; for the replica digest). */
  long nextNodeId() {
    return nextId;
  }

  /**
   * Checks that {@code node} is in this tree.
   *
   * @throws IllegalArgumentException if it was removed or belongs to another cache
   */
  void checkNode(String operation, RadixNode node) {
    java.util.Objects.requireNonNull(node, "node");
    RadixNode root = node;
    while (root.parent != null) {
      root = root.parent;
    }
    if (node.deleted || roots.get(root.namespace) != root) {
      throw new IllegalArgumentException(
          operation
              + " of node id="
              + node.id
              + ": the node is not in this cache's tree (removed, or from another cache); match"
              + " again");
    }
  }

  void maybeDropRoot(RadixNode root) {
    // Salted namespaces may be unbounded; an idle empty root is dropped (never namespace 0).
    if (root.namespace != 0 && root.childCount == 0 && root.lockRef == 0 && !root.deleted) {
      roots.remove(root.namespace);
      root.deleted = true;
      changed.mark(root);
    }
  }

  // ---------------------------------------------------------------- keys and children

  /**
   * The key a child sits under in its parent's map: its first token at page size 1, else a hash
   * of its first page, {@code sum(tokens[i] * multiplier[i])} over 32-bit ints. Pages that
   * differ in one token never collide (the multipliers are odd), other collisions are verified
   * and chained. Why this hash: its products are independent, so the JIT vectorizes the sum
   * (13 ns per 64-token page, against 74 for a multiply-xorshift chain), and a request looks up
   * several pages (docs/PERFORMANCE.md).
   */
  long firstPageKey(int[] tokens, int off) {
    if (pageSize == 1) {
      return tokens[off];
    }
    int[] m = pageMultipliers;
    int h = 0;
    for (int i = 0; i < m.length; i++) {
      h += tokens[off + i] * m[i];
    }
    return h & pageKeyMask;
  }

  RadixNode findChild(RadixNode node, int[] tokens, int pos) {
    return node.children == null
        ? null
        : ChildMaps.find(node, tokens, pos, firstPageKey(tokens, pos), pageSize);
  }

  private void addChild(RadixNode parent, RadixNode child) {
    ChildMaps.add(parent, child, firstPageKey(child.keyTokens, child.keyOffset));
    changed.mark(parent);
    changed.mark(child);
  }

  /** An empty child map for a split's top half: a deleted node's if it has a new map's size. */
  private LongMap<RadixNode> newChildMap() {
    if (spareMapCount > 0) {
      LongMap<RadixNode> map = spareMaps[--spareMapCount];
      spareMaps[spareMapCount] = null;
      if (map.slotCount() == NEW_MAP_SLOTS && map.isEmpty()) {
        return map;
      }
    }
    return new LongMap<>(2);
  }

  // ---------------------------------------------------------------- match (TreeWalk)

  /**
   * Splits a node at a page boundary (CACHE.md §4): a new node takes the prefix, the old node
   * keeps its id and the suffix; slots and page hashes are divided, everything else is copied,
   * and a pending backup or load that named the old node now covers both halves.
   */
  RadixNode split(RadixNode node, int tokens) {
    int pages = tokens / pageSize;
    RadixNode top = new RadixNode(nextId++, node.namespace);
    top.keyTokens = node.keyTokens;
    top.keyOffset = node.keyOffset;
    top.keyChunk = node.keyChunk;
    keys.shareView(node.keyChunk);
    top.keyLength = tokens;
    top.pageCount = pages;
    top.depth = node.depth - node.keyLength + tokens;
    changed.mark(node.parent);
    changed.mark(node);
    changed.mark(top);
    ChildMaps.replace(node.parent, node, top);
    node.keyOffset += tokens;
    node.keyLength -= tokens;
    node.pageCount -= pages;
    top.children = newChildMap();
    addChild(top, node);
    if (node.deviceRuns != null) {
      int[] runs = node.deviceRuns;
      top.deviceRuns = SlotRuns.slice(runs, runs.length, 0, pages);
      node.deviceRuns = SlotRuns.slice(runs, runs.length, pages, node.pageCount);
      top.residentChildren = 1;
    }
    if (node.hostSlots != null) {
      top.hostSlots = node.hostSlots;
      top.hostOffset = node.hostOffset;
      node.hostOffset += pages;
    }
    top.backupState = node.backupState;
    if (node.pendingWrite != null) {
      top.pendingWrite = node.pendingWrite;
      if (rules.splitOutsidePendingAck) {
        rules.fired++;
      } else {
        node.pendingWrite.addBefore(node, top);
      }
    }
    if (node.pendingLoad != null) {
      top.pendingLoad = node.pendingLoad;
      node.pendingLoad.nodes.add(top);
    }
    top.invalid = node.invalid;
    top.lockRef = node.lockRef;
    top.hostRef = node.hostRef;
    top.l3State = node.l3State;
    if (node.pendingL3Write != null) {
      // Both halves are read by the put and both must stay protected until its commit.
      top.pendingL3Write = node.pendingL3Write;
      node.pendingL3Write.addBefore(node, top);
    }
    top.hitCount = node.hitCount;
    top.priority = node.priority;
    top.lastAccess = node.lastAccess;
    top.created = node.created;
    if (node.pageHashes != null) {
      top.pageHashes = Arrays.copyOfRange(node.pageHashes, 0, pages);
      node.pageHashes = Arrays.copyOfRange(node.pageHashes, pages, node.pageHashes.length);
    }
    nodeCount++;
    // Both halves fall in the same pool categories, so the counters do not move; the old node
    // keeps its heap entry and the new one is an inner node, not a candidate.
    return top;
  }

  // ---------------------------------------------------------------- insert (TreeInsert)

  /**
   * A new node below {@code parent} for {@code tokens[pos, end)}, not yet linked: the key copied
   * into the key store (or viewed in {@code copy} where it covers them), the length, pages and
   * depth set; the caller gives it its slots.
   */
  RadixNode keyedLeaf(RadixNode parent, int[] tokens, int pos, int end, KeyCopy copy) {
    RadixNode leaf = new RadixNode(nextId++, parent.namespace);
    int length = end - pos;
    if (copy.covers(pos, end)) {
      leaf.keyChunk = copy.chunk;
      leaf.keyTokens = keys.chunk(copy.chunk);
      leaf.keyOffset = copy.offset + pos - copy.from;
      keys.addView(copy.chunk, length);
    } else {
      leaf.keyChunk = keys.store(tokens, pos, length);
      leaf.keyTokens = keys.array;
      leaf.keyOffset = keys.offset;
    }
    leaf.keyLength = length;
    leaf.pageCount = length / pageSize;
    leaf.depth = parent.depth + length;
    return leaf;
  }

  /**
   * Copies {@code tokens[from, end)} into the key store as {@code copy}, which must be empty,
   * if the store keeps it in a shared chunk. A longer run is not copied: it would get an array
   * of its own, which a small leaf viewing a part of it would keep whole.
   *
   * @return the array the copy is in, at {@code copy.offset}; null if not copied
   */
  int[] copyKey(KeyCopy copy, int[] tokens, int from, int end) {
    if (!keys.wouldChunk(end - from)) {
      return null;
    }
    copy.chunk = keys.store(tokens, from, end - from);
    copy.offset = keys.offset;
    copy.from = from;
    copy.end = end;
    return keys.array;
  }

  /** Ends a request's view of its admission copy, if it has one; the nodes' views stay. */
  void releaseKey(KeyCopy copy) {
    if (copy.chunk >= 0) {
      keys.release(copy.chunk, copy.end - copy.from);
      copy.chunk = -1;
    }
  }

  /** Frees a node's device slots, a run at a time, and ends its residency. */
  private void releaseDevice(RadixNode n) {
    int[] runs = n.deviceRuns;
    for (int k = 0; k < runs.length; k += 2) {
      devicePool.releaseRun(runs[k], runs[k + 1]);
    }
    n.deviceRuns = null;
    if (n.stateSlots != null) {
      // The device snapshot goes with the pages; a host snapshot stays (HYBRID.md §5).
      devicePool.release(n.stateSlots, 0, n.stateSlots.length);
      n.stateSlots = null;
    }
  }

  /** Whether no node from {@code node} up to the root is invalid. */
  static boolean pathValid(RadixNode node) {
    for (RadixNode n = node; n != null; n = n.parent) {
      if (n.invalid != 0) {
        return false;
      }
    }
    return true;
  }

  /** The device slots of the path from the root to {@code node}, which must all be resident. */
  int[] pathDeviceSlots(RadixNode node) {
    int[] out = new int[node.depth / pageSize];
    for (RadixNode n = node; n.parent != null; n = n.parent) {
      n.copyDeviceSlots(out, (n.depth - n.keyLength) / pageSize, devicePool);
    }
    return out;
  }

  /**
   * Inserts {@code tokens[pos, end)} below {@code from} as host-only, committed nodes whose host
   * pages are {@code slots[0..]} (one per page, in order): the pages of an L3 prefetch. A matched
   * node that is host-committed is passed through and the slots of its pages are released as
   * duplicates ({@code out.hostDuplicates}); the walk stops before a node that is not committed
   * or is invalid (a host-only child there would break I3), and the rest becomes a new leaf,
   * which keeps its pages' chained hashes from {@code hashes} (the prefetch's candidates, from
   * {@code hashes.from()}). {@code out} says where it ended.
   *
   * @return the position reached; the caller releases the slots of the pages after it
   */
  int insertHostOnly(
      RadixNode from,
      int[] tokens,
      int pos,
      int end,
      int[] slots,
      CandidatePages hashes,
      InsertResult out) {
    int start = pos;
    int duplicates = 0;
    RadixNode node = from;
    while (pos < end) {
      long key = firstPageKey(tokens, pos);
      RadixNode child = ChildMaps.find(node, tokens, pos, key, pageSize);
      if (child == null) {
        // The pages' chained hashes are the candidates' (the probe computed them): kept, so
        // that a write below the new leaf or an event does not hash them again.
        int first = (pos - hashes.from()) / pageSize;
        byte[][] pageHashes = hashes.hashes(first, first + (end - pos) / pageSize);
        node =
            newHostLeaf(node, tokens, pos, end, slots, (pos - start) / pageSize, key, pageHashes);
        pos = end;
        break;
      }
      if (child.invalid != 0 || child.backupState != BackupState.COMMITTED) {
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
      if (matched == 0) {
        break;
      }
      if (matched < length) {
        child = split(child, matched);
      }
      touch(child);
      int pages = matched / pageSize;
      hostPool.release(slots, (pos - start) / pageSize, pages);
      duplicates += pages;
      pos += matched;
      node = child;
    }
    out.node = node;
    out.end = pos;
    out.hostDuplicates = duplicates;
    return pos;
  }

  private RadixNode newHostLeaf(
      RadixNode parent,
      int[] tokens,
      int pos,
      int end,
      int[] slots,
      int slotIndex,
      long key,
      byte[][] pageHashes) {
    RadixNode leaf = keyedLeaf(parent, tokens, pos, end, NO_COPY);
    leaf.pageHashes = pageHashes;
    leaf.hostSlots = slots;
    leaf.hostOffset = slotIndex;
    leaf.backupState = BackupState.COMMITTED;
    leaf.l3State = RadixNode.L3_STORED;
    leaf.created = leaf.lastAccess = ++clock;
    ChildMaps.add(parent, leaf, key);
    changed.mark(parent);
    nodeCount++;
    ledger.account(leaf, +1);
    events.stored(CacheMedium.HOST, leaf);
    keyChanged(leaf);
    return leaf;
  }

  /** The node's chained page hashes ({@link PageHasher#nodeHashes}). */
  byte[][] pageHashes(RadixNode node) {
    return PageHasher.nodeHashes(node, pageSize);
  }

  // ---------------------------------------------------------------- locks

  void lock(RadixNode node) {
    for (RadixNode n = node; n != null; n = n.parent) {
      if (n.lockRef == 0 && n.parent != null) {
        ledger.account(n, -1);
        n.lockRef = 1;
        ledger.account(n, +1);
      } else {
        n.lockRef++;
        changed.mark(n);
      }
    }
  }

  void unlock(RadixNode node) {
    for (RadixNode n = node; n != null; n = n.parent) {
      if (n.lockRef <= 0) {
        throw new IllegalStateException(
            "unlock of node id="
                + node.id
                + " finds lockRef="
                + n.lockRef
                + " on node id="
                + n.id
                + ": a lock was released twice; release each lock exactly once");
      }
    }
    for (RadixNode n = node; n != null; ) {
      RadixNode up = n.parent;
      if (n.lockRef == 1 && up != null) {
        ledger.account(n, -1);
        n.lockRef = 0;
        ledger.account(n, +1);
        if (n.invalid != 0) {
          releaseInvalid(n);
        } else {
          keyChanged(n);
        }
      } else {
        n.lockRef--;
        changed.mark(n);
        if (up == null && n.lockRef == 0) {
          maybeDropRoot(n);
        }
      }
      n = up;
    }
  }

  // ---------------------------------------------------------------- accounting and candidates

  static boolean isDeviceCandidate(RadixNode n) {
    return n.deviceRuns != null
        && n.residentChildren == 0
        && n.lockRef == 0
        && n.backupState != BackupState.PENDING
        && n.invalid == 0
        && n.parent != null;
  }

  static boolean isHostCandidate(RadixNode n) {
    return n.deviceRuns == null
        && n.hostSlots != null
        && n.childCount == 0
        && n.lockRef == 0
        && n.hostRef == 0
        && n.backupState == BackupState.COMMITTED
        && n.invalid == 0
        && n.parent != null;
  }

  /** Re-enters a node into its tier's order if it is a candidate now. */
  void keyChanged(RadixNode n) {
    if (isDeviceCandidate(n)) {
      deviceHeap.push(n, nodeCount);
    } else if (isHostCandidate(n)) {
      hostHeap.push(n, nodeCount);
    }
  }

  void touch(RadixNode n) {
    n.lastAccess = ++clock;
    changed.mark(n);
    if (touchRepushes) {
      keyChanged(n);
    }
  }

  // ---------------------------------------------------------------- removal

  /** Removes a childless, unlocked, not pending node and frees all its slots. */
  void delete(RadixNode n) {
    events.deleted(n);
    RadixNode parent = n.parent;
    ledger.account(n, -1);
    if (n.deviceRuns != null) {
      releaseDevice(n);
      parent.residentChildren--;
    }
    if (n.hostSlots != null) {
      hostPool.release(n.hostSlots, n.hostOffset, n.pageCount);
      n.hostSlots = null;
    }
    releaseHostSnapshot(n);
    n.backupState = BackupState.NONE;
    ChildMaps.remove(parent, n);
    changed.mark(parent);
    if (n.children != null && spareMapCount < spareMaps.length) {
      // Checked when it is taken, so that a delete does not read the map's memory for nothing.
      spareMaps[spareMapCount++] = n.children;
      n.children = null;
    }
    keys.release(n.keyChunk, n.keyLength);
    // A deleted node's key must not be read from a chunk reused since.
    n.keyTokens = null;
    n.keyChunk = -1;
    n.deleted = true;
    nodeCount--;
    afterChildGone(parent);
  }

  /** Frees a committed node's device slots; it stays in the tree as host-only. */
  void demote(RadixNode n) {
    events.removed(CacheMedium.DEVICE, n);
    ledger.account(n, -1);
    if (rules.demoteFreesHostSnapshot && n.stateSlots != null && n.hostStateSlots != null) {
      // Class 11's broken variant: the state the host copy backs is stranded.
      rules.fired++;
      releaseHostSnapshot(n);
    }
    releaseDevice(n);
    n.parent.residentChildren--;
    changed.mark(n.parent);
    ledger.account(n, +1);
    keyChanged(n);
    afterChildGone(n.parent);
  }

  /** Frees a node's host snapshot, if it has one. */
  void releaseHostSnapshot(RadixNode n) {
    if (n.hostStateSlots != null) {
      hostPool.release(n.hostStateSlots, 0, n.hostStateSlots.length);
      n.hostStateSlots = null;
    }
  }

  private void afterChildGone(RadixNode parent) {
    if (parent.parent == null) {
      maybeDropRoot(parent);
    } else if (parent.invalid != 0) {
      releaseInvalid(parent);
    } else {
      keyChanged(parent);
    }
  }

  /**
   * Deletes an invalid node (part of a failed load, or computed on top of one), host copy
   * included, once nothing holds it.
   */
  void releaseInvalid(RadixNode n) {
    if (n.parent == null
        || n.deleted
        || n.invalid == 0
        || n.lockRef != 0
        || n.backupState == BackupState.PENDING
        || n.residentChildren != 0) {
      return;
    }
    if (n.childCount == 0 && n.hostRef == 0) {
      // An L3 write still reads the host copy: deleted at that write's commit instead.
      delete(n);
    } else if (n.hostRef == 0 && idleHostOnlyBelow(n)) {
      // Host-only nodes below an untrusted node can be matched only through it, so they go with
      // it (a node loaded back below it by a later load-back is one). Each child's delete
      // releases this node again; the last one deletes it.
      ArrayList<RadixNode> below = new ArrayList<>();
      collectBelow(n, below);
      for (RadixNode c : below) {
        if (!c.deleted) { // an invalid one goes when its last child does
          delete(c);
        }
      }
    }
  }

  /** Whether every node below {@code n} is host-only and held by nothing. */
  private static boolean idleHostOnlyBelow(RadixNode n) {
    boolean[] idle = {true};
    SubtreeWalk.walk(
        n,
        false,
        new SubtreeWalk.Visitor() {
          @Override
          public void pre(RadixNode c) {
            idle[0] &=
                !c.resident()
                    && c.lockRef == 0
                    && c.hostRef == 0
                    && c.backupState != BackupState.PENDING;
          }
        });
    return idle[0];
  }

  /** The nodes below {@code n}, leaves first (each after the nodes below it). */
  private static void collectBelow(RadixNode n, ArrayList<RadixNode> out) {
    SubtreeWalk.walk(
        n,
        false,
        new SubtreeWalk.Visitor() {
          @Override
          public void post(RadixNode c) {
            out.add(c);
          }
        });
  }

  /** Marks a node invalid, keeping the accounting right. */
  void markInvalid(RadixNode n, byte kind) {
    ledger.account(n, -1);
    n.invalid = kind;
    ledger.account(n, +1);
  }
}
