package io.kvtier.core.cache;

import java.util.ArrayDeque;

/**
 * Computes {@link RankCache#replicaDigest()}: a 64-bit hash over the replicated state only
 * (ARCHITECTURE.md §4, left column).
 *
 * <p>Order: every node, request and explicit lock is hashed on its own (its hash includes its
 * id, and a node's includes its parent's id, so the tree shape is covered) and the results are
 * summed, which makes the digest independent of the order in which the child and request hash
 * maps are walked. The FIFOs are hashed in queue order, since their order is replicated state.
 * Only fields that ranks agree on are read: no copy handle is reachable from here.
 *
 * <p>It covers, per tree node of every namespace: id, parent id, namespace, key tokens and
 * length, the device-resident and host-backed bits, the backup state and the pending write or
 * load it belongs to, the write-back flag, the failed-load marks, lockRef, hostRef, hitCount,
 * priority, lastAccess, created, the child counts, and the device and host slot numbers. The
 * allocators are deterministic, so slot numbers are replicated here; a backend whose allocation
 * were not deterministic would have to leave them out. It also covers the pool occupancy (free,
 * evictable, protected per pool, request pages, reserved host pages, pages awaiting
 * write-back), the logical clock, the node-id counter, the write and load FIFOs in order (per
 * ack: sequence, covered node ids and page counts, retired slots, the request of a prepared
 * backup), the active requests (id, namespace, priority, token count, lock node, prefix length,
 * own pages, and the prepared backup's extent, host slots and streamed layers), explicit node
 * locks, the L3 queues, and the {@link RankCache#stats()} counters. Page hashes are left out:
 * they are a function of the keys. It allocates no more than a walk stack.
 *
 * <p>Kept incrementally: because the node terms are summed, {@link #of} keeps each node's term
 * ({@link RadixNode#digestTerm}) and their sum ({@link ChangedNodes#nodeDigestSum}) and replaces
 * only the terms of the nodes marked since its last call; its value is that of {@link #full}.
 * The rest (global fields, FIFOs, requests, locks) is small and hashed in full every call.
 */
final class ReplicaDigest {
  private static final long NONE = -1L;

  private long h;

  private ReplicaDigest(long seed) {
    this.h = seed;
  }

  /** Starts over with {@code seed}, so one scratch instance serves every node of a walk. */
  private ReplicaDigest reset(long seed) {
    h = seed;
    return this;
  }

  /**
   * The digest, its node part kept incrementally: the first call walks the tree and starts
   * {@link ChangedNodes} tracking; later calls rehash only the nodes marked since. Equal to
   * {@link #full} as long as every change of a hashed node field is marked, which {@link
   * #verifyNodeTerms} checks.
   */
  static long of(RankCache cache) {
    CacheTree tree = cache.rooms().tree();
    ChangedNodes changed = tree.changed;
    if (!changed.digestTracking()) {
      changed.nodeDigestSum = nodes(tree, new ReplicaDigest(0), true);
      changed.clearDigest();
      changed.startDigest();
    } else {
      refresh(changed, new ReplicaDigest(0));
    }
    return of(cache, changed.nodeDigestSum);
  }

  /**
   * The digest computed from scratch, reading no kept term: what {@link #of} returned before it
   * was incremental, and equal to it.
   */
  static long full(RankCache cache) {
    return of(cache, nodes(cache.rooms().tree(), new ReplicaDigest(0), false));
  }

  /**
   * Rehashes every node of the tree and compares its term with the one the incremental digest
   * keeps, then the sum: a difference is a change that no room marked ({@link ChangedNodes}).
   *
   * @throws CacheInvariantException naming the first node whose kept term is stale
   */
  static void verifyNodeTerms(RankCache cache) {
    CacheTree tree = cache.rooms().tree();
    ChangedNodes changed = tree.changed;
    if (!changed.digestTracking()) {
      return;
    }
    ReplicaDigest scratch = new ReplicaDigest(0);
    refresh(changed, scratch);
    long sum = 0;
    ArrayDeque<RadixNode> stack = roots(tree);
    while (!stack.isEmpty()) {
      RadixNode n = stack.pop();
      long term = node(n, scratch);
      if (term != n.digestTerm) {
        throw new CacheInvariantException(
            n
                + " changed without a mark in ChangedNodes: its digest term is "
                + Long.toHexString(term)
                + " but the incremental digest keeps "
                + Long.toHexString(n.digestTerm)
                + "; the room that changed it must call ChangedNodes.mark");
      }
      sum += term;
      pushChildren(n, stack);
    }
    if (sum != changed.nodeDigestSum) {
      throw new CacheInvariantException(
          "the incremental digest's node sum "
              + Long.toHexString(changed.nodeDigestSum)
              + " differs from the tree's "
              + Long.toHexString(sum)
              + ": a node left the tree without a mark in ChangedNodes");
    }
  }

  /** Replaces the terms of the nodes marked since the last call; drops those deleted since. */
  private static void refresh(ChangedNodes changed, ReplicaDigest scratch) {
    RadixNode[] marked = changed.digestNodes();
    long sum = changed.nodeDigestSum;
    for (int i = 0, count = changed.digestCount(); i < count; i++) {
      RadixNode n = marked[i];
      sum -= n.digestTerm;
      n.digestTerm = n.deleted ? 0 : node(n, scratch);
      sum += n.digestTerm;
    }
    changed.nodeDigestSum = sum;
    changed.clearDigest();
  }

  private static long of(RankCache cache, long nodeSum) {
    CacheTree tree = cache.rooms().tree();
    PoolLedger ledger = cache.rooms().ledger();
    Backups backups = cache.rooms().backups();
    LoadBacks loadBacks = cache.rooms().loadBacks();
    ReplicaDigest global = new ReplicaDigest(0x6B76_7469_6572L);
    global.add(tree.pageSize).add(tree.clock).add(tree.nextNodeId()).add(tree.nodeCount);
    PoolUsage device = cache.deviceUsage();
    PoolUsage host = cache.hostUsage();
    global.add(device.free()).add(device.evictable()).add(device.protectedPages());
    global.add(host.free()).add(host.evictable()).add(host.protectedPages());
    global.add(ledger.requestPages).add(ledger.reservedHostPages).add(ledger.writeBackPages);
    global.add(backups.writeSequence).add(loadBacks.loadSequence);
    CacheStats s = cache.stats();
    for (CacheCounter c : CacheCounter.all()) {
      global.add(s.get(c));
    }
    global.writes(backups).loads(loadBacks);
    L3Tier l3 = cache.rooms().l3().map(L3Room::tier).orElse(null);
    if (l3 != null) {
      global.l3(l3);
    }

    long sum = global.finish();
    sum += nodeSum;
    sum += requests(cache, global);
    sum += locks(cache, global);
    return mix(sum);
  }

  // ---------------------------------------------------------------- parts

  private ReplicaDigest writes(Backups backups) {
    add(backups.writes.size());
    for (WriteAck ack : backups.writes) {
      add(ack.sequence).add(ack.preparedRequest).add(ack.writeBackPages);
      add(ack.isRetirement() ? 1 : 0);
      if (ack.isRetirement()) {
        add(ack.retiredHostSlots.length);
        for (int slot : ack.retiredHostSlots) {
          add(slot);
        }
      }
      add(ack.nodes.size());
      for (RadixNode n : ack.nodes) {
        add(n.id).add(n.pageCount);
      }
    }
    return this;
  }

  private ReplicaDigest loads(LoadBacks loadBacks) {
    add(loadBacks.loads.size());
    for (LoadBack op : loadBacks.loads) {
      add(op.sequence).add(op.lockNode.id).add(op.pages).add(op.layers);
      add(op.nodes.size());
      for (RadixNode n : op.nodes) {
        add(n.id).add(n.pageCount);
      }
    }
    return this;
  }

  private ReplicaDigest l3(L3Tier l3) {
    L3Stats s = l3.stats();
    for (L3Counter c : L3Counter.all()) {
      if (c.inReplicaDigest()) {
        add(s.get(c));
      }
    }
    add(l3.writes.sequence).add(l3.prefetches.sequence).add(l3.writes.queue.size());
    for (L3Write write : l3.writes.queue) {
      add(write.sequence).add(write.pages).add(write.nodes.size());
      for (RadixNode n : write.nodes) {
        add(n.id);
      }
    }
    add(l3.prefetches.pending.size());
    for (Prefetch op : l3.prefetches.pending) {
      prefetch(op);
    }
    // Live outcomes by request: summed, so the hash map's order cannot enter.
    long live = 0;
    LongMap<Prefetch> byRequest = l3.prefetches.byRequest;
    for (int s2 = 0; s2 < byRequest.slotCount(); s2++) {
      Prefetch op = byRequest.valueAt(s2);
      if (op != null) {
        live += new ReplicaDigest(0x5046_4554L).prefetch(op).finish();
      }
    }
    return add(live);
  }

  private ReplicaDigest prefetch(Prefetch op) {
    add(op.sequence).add(op.requestId).add(op.namespace).add(op.state.ordinal());
    add(op.startToken).add(op.candidatePages).add(op.reservedPages).add(op.heldFrom);
    add(op.insertedTokens).add(op.lockNode == null ? NONE : op.lockNode.id);
    for (int i = op.heldFrom; op.hostSlots != null && i < op.reservedPages; i++) {
      add(op.hostSlots[i]);
    }
    return this;
  }

  /** The sum of every node's term; with {@code keep}, each node also keeps its term. */
  private static long nodes(CacheTree tree, ReplicaDigest scratch, boolean keep) {
    long sum = 0;
    ArrayDeque<RadixNode> stack = roots(tree);
    while (!stack.isEmpty()) {
      RadixNode n = stack.pop();
      long term = node(n, scratch);
      if (keep) {
        n.digestTerm = term;
      }
      sum += term;
      pushChildren(n, stack);
    }
    return sum;
  }

  private static ArrayDeque<RadixNode> roots(CacheTree tree) {
    ArrayDeque<RadixNode> stack = new ArrayDeque<>();
    LongMap<RadixNode> roots = tree.roots;
    for (int s = 0; s < roots.slotCount(); s++) {
      RadixNode root = roots.valueAt(s);
      if (root != null) {
        stack.push(root);
      }
    }
    return stack;
  }

  private static void pushChildren(RadixNode n, ArrayDeque<RadixNode> stack) {
    LongMap<RadixNode> children = n.children;
    if (children != null) {
      for (int s = 0; s < children.slotCount(); s++) {
        for (RadixNode c = children.valueAt(s); c != null; c = c.sameKeyNext) {
          stack.push(c);
        }
      }
    }
  }

  private static long node(RadixNode n, ReplicaDigest scratch) {
    ReplicaDigest d = scratch.reset(0x4E4F_4445L);
    d.add(n.id).add(n.parent == null ? NONE : n.parent.id).add(n.namespace);
    d.add(n.keyLength).add(n.pageCount).add(n.depth);
    for (int i = 0; i < n.keyLength; i++) {
      d.add(n.keyTokens[n.keyOffset + i]);
    }
    d.add(n.resident() ? 1 : 0);
    if (n.resident()) {
      addRuns(d, n.deviceRuns, n.deviceRuns.length);
    }
    d.add(n.hostSlots != null ? 1 : 0);
    if (n.hostSlots != null) {
      for (int i = 0; i < n.pageCount; i++) {
        d.add(n.hostSlots[n.hostOffset + i]);
      }
    }
    d.add(n.backupState.ordinal());
    d.add(n.pendingWrite == null ? NONE : n.pendingWrite.sequence);
    d.add(n.pendingLoad == null ? NONE : n.pendingLoad.sequence);
    d.add(n.evictAfterBackup ? 1 : 0).add(n.invalid);
    d.add(n.lockRef).add(n.hostRef).add(n.hitCount).add(n.priority).add(n.l3State);
    d.add(n.pendingL3Write == null ? NONE : n.pendingL3Write.sequence);
    d.add(n.lastAccess).add(n.created);
    d.add(n.childCount).add(n.residentChildren);
    // Recurrent-state snapshots (HYBRID.md §5) only where present, so that every digest of a
    // model without them stays what it was.
    if (n.stateSlots != null || n.hostStateSlots != null || n.l3Snapshot != 0) {
      d.add(0x534E_4150L);
      addSlots(d, n.stateSlots);
      addSlots(d, n.hostStateSlots);
      d.add(n.l3Snapshot);
    }
    return d.finish();
  }

  private static long requests(RankCache cache, ReplicaDigest scratch) {
    long sum = 0;
    LongMap<RequestState> requests = cache.rooms().requests();
    for (int s = 0; s < requests.slotCount(); s++) {
      RequestState r = requests.valueAt(s);
      if (r == null) {
        continue;
      }
      ReplicaDigest d = scratch.reset(0x5245_5155L);
      d.add(r.id).add(r.namespace).add(r.priority).add(r.length);
      d.add(r.lockNode.id).add(r.prefixLength).add(r.ownCount());
      addRuns(d, r.own.runs(), r.own.runInts());
      if (r.snapshotCount > 0 || r.tailSlots != null || r.resumeSlots.length > 0) {
        d.add(0x534E_4150L).add(r.snapshotCount).add(r.nextSnapshot);
        for (int i = 0; i < r.snapshotCount; i++) {
          d.add(r.snapshotPositions[i]);
          addSlots(d, r.snapshotSlots[i]);
        }
        addSlots(d, r.tailSlots);
        addSlots(d, r.resumeSlots);
      }
      PreparedBackup b = r.prepared;
      d.add(b == null ? 0 : 1);
      if (b != null) {
        d.add(b.startToken).add(b.pages).add(b.layers).add(b.streamedCount);
        for (int i = 0; i < b.pages; i++) {
          d.add(b.hostSlots[i]);
        }
        for (int layer = 0; layer < b.layers; layer++) {
          d.add(b.streamed(layer) ? layer : NONE);
        }
        if (b.statePositions.length > 0) {
          // The covered snapshots (HYBRID.md §5); absent without them, so digests are unchanged.
          d.add(0x5053_4E50L).add(b.tail ? 1 : 0);
          for (int i = 0; i < b.statePositions.length; i++) {
            d.add(b.statePositions[i]);
            addSlots(d, b.stateDevice[i]);
          }
          for (int i = b.pages; i < b.hostSlots.length; i++) {
            d.add(b.hostSlots[i]);
          }
        }
      }
      sum += d.finish();
    }
    return sum;
  }

  private static long locks(RankCache cache, ReplicaDigest scratch) {
    long sum = 0;
    LongMap<CacheLock> locks = cache.rooms().locks();
    for (int s = 0; s < locks.slotCount(); s++) {
      CacheLock lock = locks.valueAt(s);
      if (lock != null) {
        sum += scratch.reset(0x4C4F_434BL).add(lock.serial).add(lock.node.id).finish();
      }
    }
    return sum;
  }

  // ---------------------------------------------------------------- hashing

  /** Adds the slots of the first {@code used} ints of the runs {@code runs}, one per page. */
  private static void addSlots(ReplicaDigest d, int[] slots) {
    if (slots == null) {
      d.add(NONE);
      return;
    }
    d.add(slots.length);
    for (int slot : slots) {
      d.add(slot);
    }
  }

  private static void addRuns(ReplicaDigest d, int[] runs, int used) {
    for (int k = 0; k < used; k += 2) {
      for (int slot = runs[k], end = runs[k] + runs[k + 1]; slot < end; slot++) {
        d.add(slot);
      }
    }
  }

  private ReplicaDigest add(long v) {
    h = Long.rotateLeft(h ^ (v * 0x9E37_79B9_7F4A_7C15L), 29) * 0xBF58_476D_1CE4_E5B9L;
    return this;
  }

  private long finish() {
    return mix(h);
  }

  /** The SplitMix64 finalizer: every input bit affects every output bit. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
    return z ^ (z >>> 31);
  }
}
