package io.kvtier.core.cache;

import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Checks a {@link RankCache} against the invariants of CACHE.md §1 after any operation: I1
 * device residency is prefix-closed, I2 evicted implies backed up, I3 host backups are
 * prefix-closed, I4 lengths are page multiples and slots match keys, I5 per-pool accounting with
 * no slot owned twice and nothing leaked; plus the tree's own bookkeeping (parent links, child
 * maps, lock counts, ack membership, eviction-heap entries of every candidate), the host slots
 * held by prepared backups and retirement acks, and the pairing of the rank-local copy groups
 * with the replicated queues.
 *
 * <p>{@link #check} costs time linear in the tree, the requests and the pools: for tests, the
 * simulator and debug runs, not for the request path. {@link #checkChanged} costs what changed
 * since it last ran: the nodes marked in {@link ChangedNodes} with their parents' and their own
 * child maps, the requests and the queues; the simulator runs it after every tick and {@link
 * #check} every {@code fullCheckInterval} ticks and at the end (docs/CACHE.md §8).
 */
public final class CacheInvariants {
  private CacheInvariants() {}

  /**
   * Checks every invariant.
   *
   * @param cache the cache, between two operations
   * @throws CacheInvariantException naming the first violation found
   */
  public static void check(RankCache cache) {
    Checker checker = new Checker(cache, true);
    checker.run();
    ReplicaDigest.verifyNodeTerms(cache);
    checker.keepSums();
  }

  /**
   * Checks the invariants on what changed since the last {@link #check} or {@code checkChanged}
   * of this cache: every node marked in {@link ChangedNodes} (and its parent) against the rules
   * of a node, its parent and its children (links, I1 to I4, backup and queue membership, lock
   * counts, heap entry of a candidate, slots allocated); every request, explicit lock and queue;
   * and the pool accounting against sums over the tree kept from the last full check and updated
   * by the marked nodes. What it leaves to {@link #check}: a slot owned twice (by two nodes, or a
   * node and a request), the allocators' free lists and the key store's views, and a change that
   * no room marked. The first call runs {@link #check} and starts the marks.
   *
   * @param cache the cache, between two operations
   * @throws CacheInvariantException naming the first violation found
   */
  public static void checkChanged(RankCache cache) {
    ChangedNodes changed = cache.rooms().tree().changed;
    if (!changed.checkTracking()) {
      check(cache);
      return;
    }
    new Checker(cache, false).runChanged();
  }

  /**
   * Checks every invariant and that the cache is idle with nothing leaked: no active request, no
   * lock, no pending backup or load, every device page either free or evictable from the tree.
   *
   * @param cache the cache, after every request ended and every operation was committed
   * @throws CacheInvariantException naming the first violation found
   */
  public static void checkIdle(RankCache cache) {
    Checker checker = new Checker(cache, true);
    checker.run();
    ReplicaDigest.verifyNodeTerms(cache);
    checker.keepSums();
    checker.idle();
  }

  private static final class Checker {
    private final RankCache cache;
    private final CacheTree tree;
    private final PoolLedger ledger;
    private final Backups backups;
    private final LoadBacks loadBacks;
    private final int pageSize;
    private final int snapshotSlots;
    private final Map<RadixNode, Integer> explicitLocks = new IdentityHashMap<>();
    private final Map<RadixNode, WriteAck> ackOf = new IdentityHashMap<>();
    private final Map<RadixNode, LoadBack> loadOf = new IdentityHashMap<>();
    private final Map<RadixNode, L3Write> l3WriteOf = new IdentityHashMap<>();
    private final Map<RadixNode, Boolean> seen = new IdentityHashMap<>();
    private final Object[] deviceOwner;
    private final Object[] hostOwner;
    private Set<RadixNode> liveDevice;
    private Set<RadixNode> liveHost;
    private long deviceEvictable;
    private long deviceProtected;
    private long hostEvictable;
    private long hostProtected;
    private long requestPages;
    private long reservedHostPages;
    private int streamingRequests;
    private int nodes;

    /** Views of each key store chunk found on nodes and request key copies, and their ints. */
    private final int[] chunkViews;

    private long chunkInts;
    private int deviceOwned;

    /** Released device slots that a streamed copy still reads (held, freed at an ack's commit). */
    private int deferredDevice;

    /** The deferred slots the incremental check counted (the full one uses its owner table). */
    private final java.util.Set<Integer> deferredSeen = new java.util.HashSet<>();

    private int hostOwned;

    /** Whether this is a full check; else only the changed nodes are looked at. */
    private final boolean full;

    Checker(RankCache cache, boolean full) {
      this.cache = cache;
      this.full = full;
      this.tree = cache.rooms().tree();
      this.ledger = cache.rooms().ledger();
      this.backups = cache.rooms().backups();
      this.loadBacks = cache.rooms().loadBacks();
      this.pageSize = tree.pageSize;
      this.snapshotSlots = cache.config().snapshotSlots();
      this.deviceOwner = full ? new Object[ledger.devicePool.capacity()] : null;
      this.hostOwner = full ? new Object[ledger.hostPool.capacity()] : null;
      this.chunkViews = full ? new int[tree.keys.chunkCount()] : null;
    }

    private static void fail(String message) {
      throw new CacheInvariantException(message);
    }

    void run() {
      collectLocksAndAcks();
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
        seen.put(root, Boolean.TRUE);
        int locks = subtree(root) + explicitLocks.getOrDefault(root, 0);
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
      checkRequests();
      checkQueues();
      checkPools();
    }

    private void collectLocksAndAcks() {
      LongMap<RequestState> requests = cache.rooms().requests();
      for (int s = 0; s < requests.slotCount(); s++) {
        RequestState r = requests.valueAt(s);
        if (r != null) {
          explicitLocks.merge(r.lockNode, 1, Integer::sum);
        }
      }
      LongMap<CacheLock> locks = cache.rooms().locks();
      for (int s = 0; s < locks.slotCount(); s++) {
        CacheLock lock = locks.valueAt(s);
        if (lock != null) {
          if (lock.released) {
            fail(lock + " is released but still registered");
          }
          explicitLocks.merge(lock.node, 1, Integer::sum);
        }
      }
      for (LoadBack op : loadBacks.loads) {
        explicitLocks.merge(op.lockNode, 1, Integer::sum);
        for (RadixNode n : op.nodes) {
          if (loadOf.put(n, op) != null) {
            fail("node " + n + " is in two pending loads");
          }
        }
      }
      L3Tier l3 = cache.rooms().l3().map(L3Room::tier).orElse(null);
      if (l3 != null) {
        for (L3Write write : l3.writes) {
          for (RadixNode n : write.nodes) {
            if (l3WriteOf.put(n, write) != null) {
              fail("node " + n + " is in two pending L3 writes");
            }
          }
        }
        for (Prefetch op : l3.pending) {
          if (op.state == Prefetch.State.DRAINING) {
            if (op.lockNode != null) {
              fail(op + " drains but still holds a lock on " + op.lockNode);
            }
          } else if (op.state == Prefetch.State.DONE
              || op.lockNode == null
              || l3.byRequest.get(op.requestId) != op) {
            fail(op + " is pending but DONE, holds no anchor lock, or is not its request's");
          } else {
            explicitLocks.merge(op.lockNode, 1, Integer::sum);
          }
        }
        LongMap<Prefetch> live = l3.byRequest;
        for (int s = 0; s < live.slotCount(); s++) {
          Prefetch op = live.valueAt(s);
          if (op == null) {
            continue;
          }
          if (op.requestId != live.keyAt(s) || op.state == Prefetch.State.DRAINING) {
            fail(op + " is filed under request " + live.keyAt(s) + " in state " + op.state);
          }
          if (op.state == Prefetch.State.DONE) {
            if (cache.rooms().requests().get(op.requestId) != null) {
              fail(op + " is DONE but its request is active: the outcome should be taken");
            }
            if (op.lockNode != null) {
              explicitLocks.merge(op.lockNode, 1, Integer::sum);
            }
          } else if (!l3.pending.contains(op)) {
            fail(op + " is live but not pending");
          }
        }
      }
      for (WriteAck ack : backups.writes) {
        for (int i = 0; i < ack.nodes.size(); i++) {
          RadixNode n = ack.nodes.get(i);
          if (ackOf.put(n, ack) != null) {
            fail("node " + n + " is in two pending write acks");
          }
          for (int j = 0; j < i; j++) {
            for (RadixNode a = ack.nodes.get(j).parent; a != null; a = a.parent) {
              if (a == n) {
                fail(
                    "write ack "
                        + ack.sequence
                        + " lists "
                        + ack.nodes.get(j)
                        + " before its ancestor "
                        + n);
              }
            }
          }
        }
      }
    }

    /**
     * Checks the subtree below {@code root}; returns the sum of its children's lockRefs. A walk
     * with a stack of its own, in the order of a recursive one (each node's rules, then its
     * children, then its lock count): with a snapshot at every page a tree is as deep as its
     * longest prompt is pages, which overflowed the thread's stack when this recursed.
     */
    private int subtree(RadixNode root) {
      java.util.ArrayDeque<Frame> stack = new java.util.ArrayDeque<>();
      Frame top = new Frame(root);
      while (true) {
        RadixNode child = top.nextChild();
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
        checkChildCounts(top.node, top.count, top.resident);
        if (stack.isEmpty()) {
          return top.lockSum;
        }
        RadixNode n = top.node;
        checkLocks(n, top.lockSum + explicitLocks.getOrDefault(n, 0));
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

      RadixNode nextChild() {
        return children.nextChild();
      }
    }

    /** The children counted under {@code parent} against its counters. */
    private static void checkChildCounts(RadixNode parent, int children, int resident) {
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

    /** A node's own checks, before its children's ({@link #subtree}). */
    private void enter(RadixNode p, RadixNode n) {
      nodes++;
      if (seen.put(n, Boolean.TRUE) != null) {
        fail(n + " is reachable twice");
      }
      nodeRules(p, n);
      claimSlots(n);
      categorize(n);
    }

    /** The rules of one non-root node against its parent and the queues; not its children. */
    private void nodeRules(RadixNode p, RadixNode n) {
      if (n.parent != p || n.deleted || n.namespace != p.namespace) {
        fail(n + " has a bad parent link, deleted flag or namespace under " + p);
      }
      // I4
      if (n.keyLength <= 0
          || n.keyLength % pageSize != 0
          || n.pageCount * pageSize != n.keyLength
          || n.depth != p.depth + n.keyLength) {
        fail(
            "I4: "
                + n
                + " has keyLength="
                + n.keyLength
                + " pageCount="
                + n.pageCount
                + " depth="
                + n.depth
                + " (pageSize="
                + pageSize
                + ", parent depth="
                + p.depth
                + ")");
      }
      if (n.childKey != tree.firstPageKey(n.keyTokens, n.keyOffset)
          || tree.findChild(p, n.keyTokens, n.keyOffset) != n) {
        fail(n + " is not found under its first page in " + p);
      }
      keyView(n.keyChunk, n.keyLength);
      if (n.pageHashes != null && n.pageHashes.length != n.pageCount) {
        fail(n + " has " + n.pageHashes.length + " page hashes for " + n.pageCount + " pages");
      }
      boolean resident = n.resident();
      boolean parentRoot = p.parent == null;
      // I1
      if (resident && !parentRoot && !p.resident()) {
        fail("I1: " + n + " is on the device but its parent " + p + " is not");
      }
      // I2
      if (!resident && (n.hostSlots == null || n.backupState != BackupState.COMMITTED)) {
        fail("I2: " + n + " is evicted from the device without a committed backup");
      }
      checkBackup(p, n, parentRoot);
      if (n.pendingLoad != null && (!resident || loadOf.get(n) != n.pendingLoad)) {
        fail(n + " names a load it is not part of, or is not resident: " + n.pendingLoad);
      }
      if (n.pendingLoad == null && loadOf.containsKey(n)) {
        fail(n + " is in pending load " + loadOf.get(n) + " but does not name it");
      }
      if (n.invalid == RadixNode.DEVICE_INVALID
          && (!resident || n.backupState != BackupState.COMMITTED)) {
        fail(n + " is device-invalid but not a resident committed node");
      }
      l3SnapshotRules(n);
      if (n.hostRef != (n.pendingL3Write != null ? 1 : 0)) {
        fail(
            n
                + " has hostRef="
                + n.hostRef
                + " but "
                + (n.pendingL3Write != null ? "one" : "no")
                + " L3 write reads its host copy");
      }
      if (n.pendingL3Write != null
          && (l3WriteOf.get(n) != n.pendingL3Write
              || n.l3State != RadixNode.L3_WRITING
              || n.backupState != BackupState.COMMITTED
              || n.hostSlots == null)) {
        fail(
            n
                + " names L3 write "
                + n.pendingL3Write
                + " but is not in it, not WRITING or"
                + " has no committed host copy");
      }
      if (n.pendingL3Write == null
          && (l3WriteOf.containsKey(n) || n.l3State == RadixNode.L3_WRITING)) {
        fail(n + " is in an L3 write or WRITING without naming the write");
      }
      snapshotRules(n);
      if (CacheTree.isDeviceCandidate(n) && !liveDevice().contains(n)) {
        fail(n + " is a device eviction candidate without a live heap entry");
      }
      if (CacheTree.isHostCandidate(n) && !liveHost().contains(n)) {
        fail(n + " is a host eviction candidate without a live heap entry");
      }
    }

    /**
     * I7 (HYBRID.md §7): a device snapshot only on a resident node, a host snapshot only with host
     * slots and in the node's backup state, each of {@code kvtier.snapshot-slots} slots (a
     * snapshot is at its node's end by construction: a split leaves it to the lower half); a
     * node whose backup registered with a device snapshot (PENDING or COMMITTED with one) has
     * the host snapshot of that backup, so that a demotion keeps it matchable.
     */
    private void snapshotRules(RadixNode n) {
      if (n.stateSlots == null && n.hostStateSlots == null) {
        return;
      }
      if (snapshotSlots == 0) {
        fail("I7: " + n + " has a snapshot but kvtier.snapshot-slots=0");
      }
      if (n.stateSlots != null && (!n.resident() || n.stateSlots.length != snapshotSlots)) {
        fail(
            "I7: "
                + n
                + " has a device snapshot of "
                + n.stateSlots.length
                + " slots "
                + (n.resident() ? "" : "but is not on the device"));
      }
      if (n.hostStateSlots != null
          && (n.hostSlots == null
              || n.backupState == BackupState.NONE
              || n.hostStateSlots.length != snapshotSlots)) {
        fail(
            "I7: "
                + n
                + " has a host snapshot of "
                + n.hostStateSlots.length
                + " slots without a host copy in its backup state");
      }
      if (n.stateSlots != null
          && n.backupState != BackupState.NONE
          && n.hostSlots != null
          && n.hostStateSlots == null) {
        fail("I7: " + n + " is backed up with a device snapshot but has no host snapshot");
      }
    }

    private Set<RadixNode> liveDevice() {
      if (liveDevice == null) {
        liveDevice = tree.deviceHeap.liveNodes();
      }
      return liveDevice;
    }

    private Set<RadixNode> liveHost() {
      if (liveHost == null) {
        liveHost = tree.hostHeap.liveNodes();
      }
      return liveHost;
    }

    private void checkBackup(RadixNode p, RadixNode n, boolean parentRoot) {
      switch (n.backupState) {
        case NONE -> {
          if (n.hostSlots != null || n.pendingWrite != null || n.evictAfterBackup) {
            fail(n + " is NONE but has host slots, a pending write or a write-back flag");
          }
        }
        case PENDING -> {
          if (n.hostSlots == null || n.pendingWrite == null || ackOf.get(n) != n.pendingWrite) {
            fail(n + " is PENDING without host slots or outside its write ack");
          }
        }
        case COMMITTED -> {
          if (n.hostSlots == null || n.pendingWrite != null || n.evictAfterBackup) {
            fail(n + " is COMMITTED without host slots or with a pending write");
          }
          // I3 for visible copies: a committed backup's parent is committed.
          if (!parentRoot && p.backupState != BackupState.COMMITTED) {
            fail("I3: " + n + " has a committed backup but its parent " + p + " does not");
          }
        }
        default -> fail("unknown state " + n.backupState);
      }
      if (n.backupState != BackupState.PENDING && ackOf.containsKey(n)) {
        fail(n + " is in write ack " + ackOf.get(n).sequence + " but not PENDING");
      }
      // I3 at registration: a pending backup was registered below a backed-up parent; it may
      // have lost it since (a failed parent copy), and then rolls back at its own commit.
      if (n.hostSlots != null
          && !parentRoot
          && p.hostSlots == null
          && n.backupState != BackupState.PENDING) {
        fail("I3: " + n + " is backed up but its parent " + p + " is not");
      }
    }

    private void claimSlots(RadixNode n) {
      if (n.resident()) {
        if (SlotRuns.pages(n.deviceRuns) != n.pageCount) {
          fail(n + " has device runs of " + SlotRuns.pages(n.deviceRuns) + " pages");
        }
        for (int slot : n.deviceSlots()) {
          claim(deviceOwner, ledger.devicePool, "device", slot, n);
          deviceOwned++;
        }
      }
      if (n.hostSlots != null) {
        for (int i = 0; i < n.pageCount; i++) {
          claim(hostOwner, ledger.hostPool, "host", n.hostSlots[n.hostOffset + i], n);
          hostOwned++;
        }
      }
      if (n.stateSlots != null) {
        for (int slot : n.stateSlots) {
          claim(deviceOwner, ledger.devicePool, "device", slot, n + " (snapshot)");
          deviceOwned++;
        }
      }
      if (n.hostStateSlots != null) {
        for (int slot : n.hostStateSlots) {
          claim(hostOwner, ledger.hostPool, "host", slot, n + " (snapshot)");
          hostOwned++;
        }
      }
    }

    private static void claim(
        Object[] owner, PageAllocator pool, String name, int slot, Object who) {
      int capacity = pool.capacity();
      if (slot < 0 || slot >= capacity) {
        fail(name + " slot " + slot + " of " + who + " is out of range [0, " + capacity + ")");
      }
      if (owner == null) {
        // The incremental check: ownership by two is the full check's (it needs every owner).
        if (!pool.isAllocated(slot)) {
          fail(name + " slot " + slot + " of " + who + " is free in the allocator");
        }
        return;
      }
      if (owner[slot] != null) {
        fail(name + " slot " + slot + " is owned twice: by " + owner[slot] + " and by " + who);
      }
      if (!pool.isAllocated(slot)) {
        fail(name + " slot " + slot + " of " + who + " is free in the allocator");
      }
      owner[slot] = who;
    }

    /**
     * Claims the slots of {@code held} that were released while a streamed copy reads them: no
     * one else owns them, and they are free only once the last hold goes.
     */
    private void claimDeferred(int[] held, Object who) {
      if (held == null) {
        return;
      }
      for (int slot : held) {
        if (ledger.devicePool.holds(slot) == 0) {
          fail("device slot " + slot + " of " + who + " is not held in the allocator");
        }
        if (deviceOwner == null) {
          // The incremental check has no owner table: count each deferred slot once.
          if (ledger.devicePool.isDeferred(slot) && deferredSeen.add(slot)) {
            claim(null, ledger.devicePool, "device", slot, who + " (released, copy reads it)");
            deferredDevice++;
          }
          continue;
        }
        if (ledger.devicePool.isDeferred(slot) && deviceOwner[slot] == null) {
          claim(deviceOwner, ledger.devicePool, "device", slot, who + " (released, copy reads it)");
          deviceOwned++;
          deferredDevice++;
        }
      }
    }

    private void categorize(RadixNode n) {
      int device = devicePages(n);
      if (device > 0) {
        deviceEvictable += device;
      } else {
        deviceProtected -= device;
      }
      int host = hostPages(n);
      if (host > 0) {
        hostEvictable += host;
      } else {
        hostProtected -= host;
      }
    }

    /**
     * Whether {@code n} is in the tree: seen by the full walk, or for the incremental check,
     * linked from a live root through live parents that list it.
     */
    private boolean inTree(RadixNode n) {
      if (full) {
        return seen.containsKey(n);
      }
      for (RadixNode c = n; ; c = c.parent) {
        if (c.deleted) {
          return false;
        }
        RadixNode p = c.parent;
        if (p == null) {
          return tree.roots.get(c.namespace) == c;
        }
        if (c.keyTokens == null || tree.findChild(p, c.keyTokens, c.keyOffset) != c) {
          return false;
        }
      }
    }

    // ---------------------------------------------------------------- incremental

    /** The check of {@link CacheInvariants#checkChanged}. */
    void runChanged() {
      collectLocksAndAcks();
      ChangedNodes changed = tree.changed;
      RadixNode[] marked = changed.checkNodes();
      int count = changed.checkCount();
      for (int i = 0; i < count; i++) {
        RadixNode n = marked[i];
        keep(changed, n);
        if (!n.deleted) {
          seen.put(n, Boolean.TRUE);
          if (n.parent != null) {
            seen.put(n.parent, Boolean.TRUE);
          }
        }
      }
      for (RadixNode n : seen.keySet()) {
        changedNode(n);
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
      checkRequests();
      checkQueues();
      checkPoolsChanged(changed);
      changed.clearCheck();
    }

    /** A marked node (or a marked node's parent) that is not deleted. */
    private void changedNode(RadixNode n) {
      RadixNode p = n.parent;
      if (p == null) {
        if (tree.roots.get(n.namespace) != n
            || n.keyLength != 0
            || n.resident()
            || n.hostSlots != null
            || n.depth != 0) {
          fail("bad root for namespace " + n.namespace + ": " + n);
        }
      } else {
        if (!inTree(n)) {
          fail(n + " is not in the tree: a parent is deleted or does not list it");
        }
        nodeRules(p, n);
        claimSlots(n);
      }
      checkLocks(n, children(n) + explicitLocks.getOrDefault(n, 0));
    }

    /** A node's lockRef against the locks held on it and below it. */
    private static void checkLocks(RadixNode n, int locks) {
      if (n.lockRef != locks) {
        fail(
            n
                + " has lockRef="
                + n.lockRef
                + " but "
                + locks
                + " locks are held on it and below it");
      }
    }

    /**
     * The children of {@code parent} against its counts and against it (links, I1 and I3 seen
     * from the parent's side); returns the sum of their lockRefs.
     */
    private int children(RadixNode parent) {
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
      checkChildCounts(parent, children, resident);
      return lockSum;
    }

    /** Moves a marked node's pool categories and count in the sums kept since the full check. */
    private static void keep(ChangedNodes changed, RadixNode n) {
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
      n.keptDevicePages = devicePages(n);
      n.keptHostPages = hostPages(n);
      changed.keptNodes++;
      changed.keptDevice(n.keptDevicePages, +1);
      changed.keptHost(n.keptHostPages, +1);
    }

    /** The node's device pages: positive if evictable, negative if protected, 0 if none. */
    private static int devicePages(RadixNode n) {
      if (!n.resident()) {
        return 0;
      }
      int pages = n.pageCount + (n.stateSlots == null ? 0 : n.stateSlots.length);
      return n.lockRef == 0 && n.backupState != BackupState.PENDING && n.invalid == 0
          ? pages
          : -pages;
    }

    /** The node's host pages: positive if evictable, negative if protected, 0 if none. */
    private static int hostPages(RadixNode n) {
      if (n.hostSlots == null) {
        return 0;
      }
      return !n.resident()
              && n.lockRef == 0
              && n.hostRef == 0
              && n.backupState == BackupState.COMMITTED
              && n.invalid == 0
          ? n.pageCount + (n.hostStateSlots == null ? 0 : n.hostStateSlots.length)
          : -(n.pageCount + (n.hostStateSlots == null ? 0 : n.hostStateSlots.length));
    }

    /**
     * After a full check that passed: the sums it found become the kept sums, every node of the
     * tree is counted in them, and the incremental check starts (again) from here.
     */
    void keepSums() {
      ChangedNodes changed = tree.changed;
      changed.keptEpoch++;
      changed.keptNodes = 0;
      changed.keptDeviceEvictable = 0;
      changed.keptDeviceProtected = 0;
      changed.keptHostEvictable = 0;
      changed.keptHostProtected = 0;
      for (RadixNode n : seen.keySet()) {
        if (n.parent != null) {
          keepNode(changed, n);
        }
      }
      changed.clearCheck();
      changed.startCheck();
    }

    private void checkPoolsChanged(ChangedNodes changed) {
      if (reservedHostPages != ledger.reservedHostPages) {
        fail(
            "reservedHostPages="
                + ledger.reservedHostPages
                + " but prepared backups,"
                + " retirement acks and L3 prefetches hold "
                + reservedHostPages);
      }
      if (requestPages != ledger.requestPages) {
        fail("requestPages=" + ledger.requestPages + " but requests hold " + requestPages);
      }
      if (changed.keptDeviceEvictable != ledger.deviceEvictable
          || changed.keptDeviceProtected != ledger.deviceProtected) {
        fail(
            "device accounting: evictable="
                + ledger.deviceEvictable
                + " protected="
                + ledger.deviceProtected
                + " but the tree has evictable="
                + changed.keptDeviceEvictable
                + " protected="
                + changed.keptDeviceProtected
                + " (kept since the last full check)");
      }
      if (changed.keptHostEvictable != ledger.hostEvictable
          || changed.keptHostProtected != ledger.hostProtected) {
        fail(
            "host accounting: evictable="
                + ledger.hostEvictable
                + " protected="
                + ledger.hostProtected
                + " but the tree has evictable="
                + changed.keptHostEvictable
                + " protected="
                + changed.keptHostProtected
                + " (kept since the last full check)");
      }
      if (deferredDevice != ledger.devicePool.deferred()) {
        fail(
            "the device allocator defers "
                + ledger.devicePool.deferred()
                + " released slots but the acks and prepared backups hold "
                + deferredDevice);
      }
      long device =
          changed.keptDeviceEvictable + changed.keptDeviceProtected + requestPages + deferredDevice;
      if (ledger.devicePool.free() + device != ledger.devicePool.capacity()) {
        fail(
            "I5 device: free="
                + ledger.devicePool.free()
                + " + evictable/protected="
                + device
                + " != capacity="
                + ledger.devicePool.capacity());
      }
      long host = changed.keptHostEvictable + changed.keptHostProtected + reservedHostPages;
      if (ledger.hostPool.free() + host != ledger.hostPool.capacity()) {
        fail(
            "I5 host: free="
                + ledger.hostPool.free()
                + " + evictable/protected="
                + host
                + " != capacity="
                + ledger.hostPool.capacity());
      }
    }

    private void checkRequests() {
      LongMap<RequestState> requests = cache.rooms().requests();
      for (int s = 0; s < requests.slotCount(); s++) {
        RequestState r = requests.valueAt(s);
        if (r == null) {
          continue;
        }
        if (r.id != requests.keyAt(s)
            || !inTree(r.lockNode)
            || r.prefixLength != r.lockNode.depth) {
          fail(
              "request "
                  + r.id
                  + " locks "
                  + r.lockNode
                  + " with prefixLength="
                  + r.prefixLength
                  + ": not in the tree or not at the prefix's end");
        }
        for (RadixNode n = r.lockNode; n.parent != null; n = n.parent) {
          if (!n.resident()) {
            fail("request " + r.id + " holds a prefix through evicted node " + n);
          }
        }
        for (int slot : r.own.toArray(0, r.ownCount(), null)) {
          claim(deviceOwner, ledger.devicePool, "device", slot, "request " + r.id);
          deviceOwned++;
        }
        requestPages += r.ownCount();
        checkRequestSnapshots(r);
        KeyCopy copy = r.keyCopy;
        if (copy.chunk >= 0) {
          if (copy.from >= copy.end || copy.end > r.tokens.length) {
            fail(
                "request "
                    + r.id
                    + " keeps a key copy of tokens ["
                    + copy.from
                    + ", "
                    + copy.end
                    + ") outside its "
                    + r.tokens.length
                    + " tokens");
          }
          keyView(copy.chunk, copy.end - copy.from);
        }
        checkPrepared(r);
      }
      LongMap<CacheLock> locks = cache.rooms().locks();
      for (int s = 0; s < locks.slotCount(); s++) {
        CacheLock lock = locks.valueAt(s);
        if (lock != null && !inTree(lock.node)) {
          fail(lock + " holds a node that is not in the tree");
        }
      }
    }

    /**
     * A request's snapshot slots are its own (claimed and counted as request pages) and it
     * resumes from its locked node's device snapshot (I8: the usable end has a snapshot).
     */
    private void checkRequestSnapshots(RequestState r) {
      for (int i = 0; i < r.snapshotCount; i++) {
        int[] slots = r.snapshotSlots[i];
        if (slots == null
            || slots.length != snapshotSlots
            || r.snapshotPositions[i] <= r.prefixLength) {
          fail(
              "request "
                  + r.id
                  + " holds a snapshot at "
                  + r.snapshotPositions[i]
                  + " not past its prefix of "
                  + r.prefixLength
                  + " or of the wrong size");
        }
        for (int slot : slots) {
          claim(deviceOwner, ledger.devicePool, "device", slot, "request " + r.id + " (snapshot)");
          deviceOwned++;
        }
        requestPages += slots.length;
      }
      if (r.tailSlots != null) {
        for (int slot : r.tailSlots) {
          claim(deviceOwner, ledger.devicePool, "device", slot, "request " + r.id + " (tail)");
          deviceOwned++;
        }
        requestPages += r.tailSlots.length;
      }
      if (r.resumeSlots.length > 0
          && (r.lockNode.stateSlots == null
              || !java.util.Arrays.equals(r.resumeSlots, r.lockNode.stateSlots))) {
        fail(
            "I8: request "
                + r.id
                + " resumes from snapshot slots "
                + java.util.Arrays.toString(r.resumeSlots)
                + " that are not its locked node's "
                + r.lockNode);
      }
    }

    private void checkPrepared(RequestState r) {
      PreparedBackup b = r.prepared;
      if (b == null) {
        return;
      }
      if (b.requestId != r.id
          || b.startToken != r.prefixLength
          || b.pages < 1
          || b.pages > r.ownCount()
          || b.hostSlots.length != b.pages + b.statePositions.length * snapshotSlots
          || b.stateDevice.length != b.statePositions.length
          || b.streamedCount < 0
          || b.streamedCount > b.layers) {
        fail(
            "request "
                + r.id
                + " (prefixLength="
                + r.prefixLength
                + ", own pages="
                + r.ownCount()
                + ") has a malformed prepared backup: start="
                + b.startToken
                + " pages="
                + b.pages
                + " slots="
                + b.hostSlots.length
                + " streamed="
                + b.streamedLayers()
                + " of "
                + b.layers);
      }
      for (int i = 0; i < b.hostSlots.length; i++) {
        claim(
            hostOwner,
            ledger.hostPool,
            "host",
            b.hostSlots[i],
            "prepared backup of request " + r.id);
        hostOwned++;
      }
      reservedHostPages += b.hostSlots.length;
      streamingRequests += b.streamedCount > 0 ? 1 : 0;
      claimDeferred(b.heldDeviceSlots, "prepared backup of request " + r.id);
    }

    private void checkQueues() {
      long writeBack = 0;
      for (WriteAck ack : backups.writes) {
        claimDeferred(ack.heldDeviceSlots, "write ack " + ack.sequence);
        if (ack.isRetirement()) {
          if (!ack.nodes.isEmpty() || ack.writeBackPages != 0) {
            fail("retirement ack " + ack.sequence + " covers nodes or write-back pages");
          }
          for (int slot : ack.retiredHostSlots) {
            claim(hostOwner, ledger.hostPool, "host", slot, "retirement ack " + ack.sequence);
            hostOwned++;
          }
          reservedHostPages += ack.retiredHostSlots.length;
          continue;
        }
        if (ack.nodes.isEmpty()) {
          fail("write ack " + ack.sequence + " covers no node and retires no slot");
        }
        writeBack += ack.writeBackPages;
        for (RadixNode n : ack.nodes) {
          if (!inTree(n) || n.pendingWrite != ack) {
            fail(
                "write ack "
                    + ack.sequence
                    + " covers "
                    + n
                    + " which is not in the tree or does not name it");
          }
        }
      }
      if (writeBack != ledger.writeBackPages) {
        fail("writeBackPages=" + ledger.writeBackPages + " but the acks hold " + writeBack);
      }
      L3Tier l3 = cache.rooms().l3().map(L3Room::tier).orElse(null);
      if (l3 != null) {
        for (L3Write write : l3.writes) {
          int pages = 0;
          for (RadixNode n : write.nodes) {
            if (!inTree(n) || n.pendingL3Write != write) {
              fail(write + " covers " + n + " which is not in the tree or does not name it");
            }
            pages += n.pageCount;
          }
          if (pages != write.pages) {
            fail(write + " covers nodes of " + pages + " pages");
          }
          for (RadixNode n : write.snapshotNodes) {
            if (!write.nodes.contains(n)) {
              fail(write + " puts the snapshot of " + n + ", which it does not cover");
            }
          }
        }
        for (Prefetch op : l3.pending) {
          if (op.lockNode != null && !inTree(op.lockNode)) {
            fail(op + " locks a node not in the tree: " + op.lockNode);
          }
          if (op.state == Prefetch.State.PROBING && op.hostSlots != null) {
            fail(op + " holds host slots while probing");
          }
          if (op.hostSlots != null
              && op.reservedPages
                  != op.fetchPages + (op.snapshotSlots > 0 ? op.snapshotSlots : 0)) {
            fail(op + " reserved " + op.reservedPages + " slots for " + op.fetchPages + " pages");
          }
          for (int i = op.heldFrom; op.hostSlots != null && i < op.reservedPages; i++) {
            claim(hostOwner, ledger.hostPool, "host", op.hostSlots[i], op);
            hostOwned++;
          }
          reservedHostPages += op.heldPages();
        }
        L3Progress l3Progress = cache.rooms().l3().orElseThrow().progress();
        if (l3Progress.putGroups() != l3.writes.size()
            || l3Progress.prefetchGroups() != l3.pending.size()) {
          fail(
              "rank-local L3 work (puts="
                  + l3Progress.putGroups()
                  + ", prefetches="
                  + l3Progress.prefetchGroups()
                  + ") does not pair with the replicated queues (L3"
                  + " writes="
                  + l3.writes.size()
                  + ", pending prefetches="
                  + l3.pending.size()
                  + ")");
        }
      }
      LocalProgress progress = cache.rooms().localProgress();
      if (progress.writeGroups() != backups.writes.size()
          || progress.loadGroups() != loadBacks.loads.size()
          || progress.streamingRequests() != streamingRequests) {
        fail(
            "rank-local copy groups (writes="
                + progress.writeGroups()
                + ", loads="
                + progress.loadGroups()
                + ", streaming requests="
                + progress.streamingRequests()
                + ") do not pair with the replicated queues"
                + " (writes="
                + backups.writes.size()
                + ", loads="
                + loadBacks.loads.size()
                + ", requests with streamed layers="
                + streamingRequests
                + ")");
      }
      for (LoadBack op : loadBacks.loads) {
        if (op.committed || !inTree(op.lockNode)) {
          fail(op + " is committed or locks a node not in the tree");
        }
        for (RadixNode n : op.nodes) {
          if (!inTree(n) || n.pendingLoad != op) {
            fail(op + " covers " + n + " which is not in the tree or does not name it");
          }
        }
      }
    }

    private void checkPools() {
      if (reservedHostPages != ledger.reservedHostPages) {
        fail(
            "reservedHostPages="
                + ledger.reservedHostPages
                + " but prepared backups,"
                + " retirement acks and L3 prefetches hold "
                + reservedHostPages);
      }
      if (requestPages != ledger.requestPages) {
        fail("requestPages=" + ledger.requestPages + " but requests hold " + requestPages);
      }
      if (deviceEvictable != ledger.deviceEvictable || deviceProtected != ledger.deviceProtected) {
        fail(
            "device accounting: evictable="
                + ledger.deviceEvictable
                + " protected="
                + ledger.deviceProtected
                + " but the tree has evictable="
                + deviceEvictable
                + " protected="
                + deviceProtected);
      }
      if (hostEvictable != ledger.hostEvictable || hostProtected != ledger.hostProtected) {
        fail(
            "host accounting: evictable="
                + ledger.hostEvictable
                + " protected="
                + ledger.hostProtected
                + " but the tree has evictable="
                + hostEvictable
                + " protected="
                + hostProtected);
      }
      checkKeyStore();
      pool(
          "device",
          ledger.devicePool,
          deviceOwner,
          deviceOwned,
          deviceEvictable + deviceProtected + requestPages + deferredDevice);
      if (deferredDevice != ledger.devicePool.deferred()) {
        fail(
            "the device allocator defers "
                + ledger.devicePool.deferred()
                + " released slots but the acks and prepared backups hold "
                + deferredDevice);
      }
      pool(
          "host",
          ledger.hostPool,
          hostOwner,
          hostOwned,
          hostEvictable + hostProtected + reservedHostPages);
    }

    private void keyView(int chunk, int length) {
      if (chunk >= 0 && full) {
        chunkViews[chunk]++;
        chunkInts += length;
      }
    }

    /** Every key store chunk is viewed exactly by the nodes and request copies that use it. */
    private void checkKeyStore() {
      ChunkStore keys = tree.keys;
      for (int c = 0; c < chunkViews.length; c++) {
        if (keys.views(c) != chunkViews[c]) {
          fail(
              "key store chunk "
                  + c
                  + " counts "
                  + keys.views(c)
                  + " views but nodes and"
                  + " request key copies hold "
                  + chunkViews[c]
                  + ": a view leaked or ended twice");
        }
      }
      if (keys.liveInts() != chunkInts) {
        fail(
            "key store counts "
                + keys.liveInts()
                + " live ints but nodes and request key"
                + " copies view "
                + chunkInts);
      }
    }

    private static void pool(
        String name, PageAllocator pool, Object[] owner, int owned, long accounted) {
      int free = pool.free();
      if (free + accounted != pool.capacity()) {
        fail(
            "I5 "
                + name
                + ": free="
                + free
                + " + evictable/protected="
                + accounted
                + " != capacity="
                + pool.capacity());
      }
      if (free + owned != pool.capacity()) {
        fail(
            "I5 "
                + name
                + ": free="
                + free
                + " + owned="
                + owned
                + " != capacity="
                + pool.capacity()
                + ": a slot leaked or is owned twice");
      }
      for (int slot : pool.freeSlots()) {
        if (owner[slot] != null || pool.isAllocated(slot)) {
          fail(name + " slot " + slot + " is on the free list but owned by " + owner[slot]);
        }
      }
    }

    void idle() {
      if (cache.activeRequests() != 0) {
        fail("not idle: " + cache.activeRequests() + " requests are active");
      }
      if (cache.rooms().locks().size() != 0) {
        fail("not idle: " + cache.rooms().locks().size() + " node locks are held");
      }
      if (backups.writes.size() + loadBacks.loads.size() != 0) {
        fail(
            "not idle: "
                + backups.writes.size()
                + " writes and "
                + loadBacks.loads.size()
                + " loads are pending");
      }
      L3Tier l3 = cache.rooms().l3().map(L3Room::tier).orElse(null);
      if (l3 != null && (l3.outstanding() != 0 || l3.byRequest.size() != 0)) {
        fail(
            "not idle: "
                + l3.writes.size()
                + " L3 writes and "
                + l3.pending.size()
                + " prefetches are pending, "
                + l3.byRequest.size()
                + " prefetch outcomes unclaimed");
      }
      for (RadixNode n : seen.keySet()) {
        if (n.lockRef != 0 || n.invalid != 0 || n.hostRef != 0) {
          fail(
              "not idle: "
                  + n
                  + " is still locked, invalid or protected by an L3 write (lockRef="
                  + n.lockRef
                  + ", invalid="
                  + n.invalid
                  + ", hostRef="
                  + n.hostRef
                  + ", children="
                  + n.childCount
                  + ", resident children="
                  + n.residentChildren
                  + ")");
        }
      }
      if (reservedHostPages != 0) {
        fail("leak: " + reservedHostPages + " host pages are reserved with no request or ack");
      }
      if (deviceProtected != 0 || requestPages != 0) {
        fail(
            "leak: "
                + deviceProtected
                + " device pages of the tree and "
                + requestPages
                + " request pages are protected with no request, lock or copy left");
      }
    }

    /**
     * The L3 part of I7 (HYBRID.md §6): the L3 snapshot bit only on a node whose pages L3 holds
     * and that keeps the host snapshot L3 got (a split's upper half has neither), and only with
     * snapshots; a pending L3 write puts the snapshot of a node it covers and that
     * has a host snapshot for the put to read (protected with the pages by the write's hostRef).
     * That a prefetched snapshot is counted once is the slot claim: the node's host snapshot is
     * claimed by the node, the prefetch's held slots by the prefetch.
     */
    private void l3SnapshotRules(RadixNode n) {
      if (n.l3Snapshot != 0
          && (n.l3Snapshot != 1
              || n.l3State != RadixNode.L3_STORED
              || n.hostStateSlots == null
              || cache.config().snapshotSlots() == 0)) {
        fail(
            "I7: "
                + n
                + " has l3Snapshot="
                + n.l3Snapshot
                + " but its pages are not stored in L3 (l3State="
                + n.l3State
                + "), it has no host snapshot (the one L3 got) or there are no snapshots"
                + " (kvtier.snapshot-slots="
                + cache.config().snapshotSlots()
                + ")");
      }
      L3Write write = n.pendingL3Write;
      if (write != null && write.putsSnapshotOf(n) && n.hostStateSlots == null) {
        fail("I7: " + write + " puts the snapshot of " + n + ", which has no host snapshot");
      }
    }
  }
}
