package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.WritePolicy;

/**
 * Prepared backups (CACHE.md §11): host slots reserved at a replicated point for a request's
 * own pages, filled layer by layer while the model runs, and at the request's insert either
 * attached to the tree node that holds exactly those pages or rolled back.
 *
 * <p>Every decision here is replicated: the reservation (pool state), which layers were streamed
 * (a replicated call), the shape of the insert, and the attach predicate, which is a function of
 * {@link ReplicatedNodeView} and {@link PreparedBackup} only ({@link AttachPredicate}). Copy
 * completion never enters, except in the deliberately broken drain-timed variant that the
 * regression proof switches on through {@link RuleVariants}.
 *
 * <p>The insert of a request with a prepared backup is split at the backup's end, so that the
 * tree gets a node boundary there: the pages the backup covers then form one node whenever they
 * are new to the tree, and the predicate holds in the common case. The write-through
 * registrations the first half would make are held back until the attach decision, so that the
 * node that takes the prepared backup is not registered a second time.
 */
final class PreparedBackups {
  private final CacheTree tree;
  private final TreeInsert inserts;
  private final PoolLedger ledger;
  private final Backups backups;
  private final Evictor evictor;
  private final WriteTriggers triggers;
  private final CacheCounters counters;
  private final RuleVariants rules;
  private final int pageSize;
  private final int layers;
  private final boolean enabled;

  /** Page slots per recurrent-state snapshot; 0 = none, every path as without them. */
  private final int snapshotSlots;

  private final SnapshotRule snapshotRule;

  PreparedBackups(
      CacheTree tree,
      TreeInsert inserts,
      PoolLedger ledger,
      Backups backups,
      Evictor evictor,
      WriteTriggers triggers,
      CacheConfig config,
      int layers,
      boolean hasEngine,
      RuleVariants rules) {
    this.tree = tree;
    this.inserts = inserts;
    this.ledger = ledger;
    this.backups = backups;
    this.evictor = evictor;
    this.triggers = triggers;
    this.counters = backups.counters;
    this.rules = rules;
    this.pageSize = config.pageSize();
    this.layers = layers;
    this.enabled =
        hasEngine && config.hostPages() > 0 && config.writePolicy() != WritePolicy.WRITE_BACK;
    this.snapshotSlots = config.snapshotSlots();
    this.snapshotRule = new SnapshotRule(config.pageSize(), config.snapshotIntervalPages());
  }

  /**
   * Reserves (or extends) the request's prepared backup over its own full pages.
   *
   * @return whether every own full page is covered by the backup now
   */
  boolean prepare(RequestState r) {
    if (!enabled) {
      return false;
    }
    if (r.matchedLength > r.prefixLength) {
      // The request recomputes pages the tree matched: its insert finds the tree's nodes there,
      // which no backup of the request's pages can attach to, so a backup prepared now would
      // hold host slots and copy every page only to be rolled back. The chunk inserts past the
      // match take the ordinary write-through way, or prepare once the prefix has passed it.
      return false;
    }
    int full = Math.min(r.ownCount(), (r.length - r.prefixLength) / pageSize);
    PreparedBackup b = r.prepared;
    int have = b == null ? 0 : b.pages;
    if (full <= have) {
      return b != null;
    }
    if (b != null && b.streamedCount > 0) {
      throw new IllegalStateException(
          "prepareBackup of request id="
              + r.id
              + ": its prepared"
              + " backup of "
              + b.pages
              + " pages has streamed layers "
              + b.streamedLayers()
              + " already and cannot grow to "
              + full
              + " pages; call prepareBackup before the"
              + " first streamLayer, or insert the chunk (cacheChunk) and prepare again");
    }
    int end = r.prefixLength + full * pageSize;
    int[] positions = PreparedBackup.NO_POSITIONS;
    int[][] device = PreparedBackup.NO_STATES;
    boolean tail = false;
    if (snapshotSlots > 0) {
      // The request's snapshots inside the covered tokens (HYBRID.md §5): each lies at a node
      // end of the insert, whose node takes it with the backup.
      int n = 0;
      for (int i = 0; i < r.snapshotCount; i++) {
        int e = r.snapshotPositions[i];
        if (e > r.prefixLength && e <= end && r.snapshotSlots[i] != null) {
          n++;
        }
      }
      tail = r.tailSlots != null && !snapshotRule.isInterval(end);
      positions = new int[n + (tail ? 1 : 0)];
      device = new int[positions.length][];
      n = 0;
      for (int i = 0; i < r.snapshotCount; i++) {
        int e = r.snapshotPositions[i];
        if (e > r.prefixLength && e <= end && r.snapshotSlots[i] != null) {
          positions[n] = e;
          device[n++] = r.snapshotSlots[i];
        }
      }
      java.util.Arrays.sort(positions, 0, n);
      for (int i = 0; i < n; i++) {
        device[i] = slotsAt(r, positions[i]);
      }
      if (tail) {
        positions[n] = end;
        device[n] = r.tailSlots;
      }
    }
    int total = full + positions.length * snapshotSlots;
    int held = b == null ? 0 : b.hostSlots.length;
    int more = total - held;
    int free = ledger.hostPool.free();
    if (free < more) {
      evictor.evictHost(more - free);
      if (ledger.hostPool.free() < more) {
        return false;
      }
    }
    // Nothing was copied into a held slot yet (no layer streamed), so the slots are all alike:
    // the old reservation's come first, the new ones after, laid out as pages then snapshots.
    int[] slots = b == null ? new int[total] : java.util.Arrays.copyOf(b.hostSlots, total);
    ledger.hostPool.allocate(more, slots, held);
    ledger.reservedHostPages += more;
    if (b == null) {
      b = new PreparedBackup(r.id, r.prefixLength, layers, full, slots);
      r.prepared = b;
      counters.increment(CacheCounter.PREPARED_BACKUPS);
    } else {
      b.hostSlots = slots;
      b.pages = full;
    }
    b.statePositions = positions;
    b.stateDevice = device;
    b.tail = tail;
    return true;
  }

  /** The request's device slots of its interval snapshot at {@code e}. */
  private static int[] slotsAt(RequestState r, int e) {
    for (int i = 0; i < r.snapshotCount; i++) {
      if (r.snapshotPositions[i] == e && r.snapshotSlots[i] != null) {
        return r.snapshotSlots[i];
      }
    }
    throw new IllegalStateException("request id=" + r.id + " holds no snapshot at " + e);
  }

  /** Submits layer {@code layer} of the request's prepared backup. */
  void stream(RequestState r, int layer) {
    PreparedBackup b = r.prepared;
    if (b == null) {
      throw new IllegalStateException(
          "streamLayer of request id="
              + r.id
              + ", layer="
              + layer
              + ": the request has no prepared backup; call prepareBackup after allocate and stream"
              + " only when it returned true");
    }
    if (layer < 0 || layer >= b.layers) {
      throw new IllegalArgumentException(
          "streamLayer of request id="
              + r.id
              + ": layer="
              + layer
              + " is out of range; the KV layout has layers 0.."
              + (b.layers - 1));
    }
    if (b.streamed(layer)) {
      throw new IllegalStateException(
          "streamLayer of request id="
              + r.id
              + ": layer="
              + layer
              + " was streamed already; stream each layer once, after the model wrote it");
    }
    backups.streamLayer(b, r.own, layer);
    b.markStreamed(layer);
    counters.increment(CacheCounter.STREAMED_LAYERS);
  }

  /**
   * Inserts {@code tokens[r.prefixLength, aligned)} for a request with a prepared backup and
   * resolves the backup: split at the backup's end, attach to the node holding exactly its pages
   * if the predicate holds, else roll back. Leaves in {@code out} what a plain insert would; the
   * key hints are those of {@link CacheTree#insert}.
   *
   * @return the length already cached on the device, as {@link CacheTree#insert} returns it
   */
  int insert(
      RequestState r,
      int[] tokens,
      int aligned,
      long knownKey,
      int knownKeyPos,
      KeyCopy copy,
      InsertResult out) {
    PreparedBackup b = r.prepared;
    int backupEnd = b.endToken(pageSize);
    if (aligned < backupEnd) {
      // The insert covers only part of the backup's pages, which no node can match: give the
      // backup up first so that the inserted nodes take the ordinary write-through way.
      rollBack(r);
      return insertTo(r, tokens, aligned, knownKey, knownKeyPos, copy, out);
    }
    triggers.defer();
    int cached;
    RadixNode node;
    try {
      cached = insertTo(r, tokens, backupEnd, knownKey, knownKeyPos, copy, out);
      node = out.end == backupEnd ? out.node : null;
      resolve(r, node);
    } finally {
      triggers.registerDeferred();
    }
    if (node != null && aligned > backupEnd) {
      int more =
          inserts.insert(
              node,
              tokens,
              backupEnd,
              aligned,
              r.own,
              b.pages,
              r.priority,
              knownKey,
              knownKeyPos,
              copy,
              triggers,
              out);
      if (cached == backupEnd) {
        cached = more;
      }
    }
    return cached;
  }

  /** The request's insert of its tokens up to {@code end}, hits going to the write triggers. */
  private int insertTo(
      RequestState r,
      int[] tokens,
      int end,
      long knownKey,
      int knownKeyPos,
      KeyCopy copy,
      InsertResult out) {
    return inserts.insert(
        r.lockNode,
        tokens,
        r.prefixLength,
        end,
        r.own,
        0,
        r.priority,
        knownKey,
        knownKeyPos,
        copy,
        triggers,
        out);
  }

  /** Attaches the request's backup to {@code node} if the predicate holds, else rolls it back. */
  private void resolve(RequestState r, RadixNode node) {
    PreparedBackup b = r.prepared;
    boolean attach =
        node != null
            && node.parent != null
            && AttachPredicate.holds(ReplicatedNodeView.of(node, r.own, b.pages), b, pageSize);
    if (attach && rules.drainTimedStreamsDone != null && !rules.drainTimedStreamsDone.test(r.id)) {
      // The seed defect, on purpose: a rank-local, drain-timed test decides, and the slow rank
      // falls back to a synchronous catch-up backup of its own.
      rollBack(r);
      backups.registerBackup(node, false, false);
      return;
    }
    if (attach) {
      attach(r, node);
    } else {
      rollBack(r);
    }
  }

  /**
   * Resolves the prepared backup of a request with recurrent-state snapshots (HYBRID.md §5)
   * after its insert up to the backup's end, which ran in segments ending at each snapshot:
   * {@code end} is the node ending at the backup's end (null if the insert stopped short). The
   * chain of nodes from the backup's start to {@code end} takes the backup as one {@code
   * PENDING} ack iff every node passes the attach predicate for its part of the pages ({@link
   * AttachPredicate#holdsLink}) and every covered interval snapshot is the device snapshot of
   * the node ending there; otherwise it is rolled back whole. A covered tail the end node did
   * not take (the insert goes on past the backup's end) is given back at once: no copy ever
   * went into its slots.
   */
  void resolveChain(RequestState r, RadixNode end) {
    PreparedBackup b = r.prepared;
    java.util.List<RadixNode> chain = end == null ? null : chain(r, b, end);
    if (chain == null) {
      rollBack(r);
      return;
    }
    if (rules.drainTimedStreamsDone != null && !rules.drainTimedStreamsDone.test(r.id)) {
      rollBack(r);
      backups.registerBackup(end, true, false);
      return;
    }
    if (b.tail
        && !java.util.Arrays.equals(end.stateSlots, b.stateDevice[b.statePositions.length - 1])) {
      int n = b.statePositions.length - 1;
      int keep = b.hostSlots.length - snapshotSlots;
      ledger.hostPool.release(b.hostSlots, keep, snapshotSlots);
      ledger.reservedHostPages -= snapshotSlots;
      b.hostSlots = java.util.Arrays.copyOf(b.hostSlots, keep);
      b.statePositions = java.util.Arrays.copyOf(b.statePositions, n);
      b.stateDevice = java.util.Arrays.copyOf(b.stateDevice, n);
      b.tail = false;
    }
    attach(r, chain);
  }

  /**
   * The chain of nodes, parents first, that holds exactly the backup's pages and ends at {@code
   * end}, each passing the predicate and carrying the covered snapshot at its end (and no other);
   * null if there is none.
   */
  private java.util.List<RadixNode> chain(RequestState r, PreparedBackup b, RadixNode end) {
    java.util.ArrayDeque<RadixNode> chain = new java.util.ArrayDeque<>();
    int covered = b.statePositions.length - (b.tail ? 1 : 0);
    int found = 0;
    RadixNode n = end;
    while (n.parent != null && n.depth > b.startToken) {
      int start = n.depth - n.keyLength;
      int first = (start - b.startToken) / pageSize;
      boolean top = start <= b.startToken;
      if (start < b.startToken
          || !AttachPredicate.holdsLink(
              ReplicatedNodeView.of(n, r.own, first, n.pageCount), start, n.depth, top)) {
        return null;
      }
      int state = -1;
      for (int i = 0; i < covered; i++) {
        if (b.statePositions[i] == n.depth) {
          state = i;
        }
      }
      if (state >= 0) {
        if (!java.util.Arrays.equals(n.stateSlots, b.stateDevice[state])) {
          return null;
        }
        found++;
      } else if (n.stateSlots != null
          && !(b.tail
              && n == end
              && java.util.Arrays.equals(
                  n.stateSlots, b.stateDevice[b.statePositions.length - 1]))) {
        // A snapshot the backup has no host slots for: it would be backed up without it.
        return null;
      }
      chain.addFirst(n);
      n = n.parent;
    }
    if (chain.isEmpty() || n.depth != b.startToken || found != covered) {
      return null;
    }
    return new java.util.ArrayList<>(chain);
  }

  /** Attaches the request's prepared backup to the one node that holds exactly its pages. */
  void attach(RequestState r, RadixNode node) {
    attach(r, java.util.List.of(node));
  }

  /**
   * Attaches the request's prepared backup to {@code chain} (parents first, together exactly the
   * backup's pages): the nodes become {@code PENDING} with the reserved host slots (and those of
   * the snapshots at their ends), and one ack joins the write FIFO.
   *
   * @throws IllegalStateException if a node is {@code PENDING} or backed up already: a second
   *     backup of a node is a bug
   */
  void attach(RequestState r, java.util.List<RadixNode> chain) {
    PreparedBackup b = r.prepared;
    for (RadixNode node : chain) {
      if (node.backupState == BackupState.PENDING || node.hostSlots != null) {
        throw new IllegalStateException(
            "attach of the prepared backup of request id="
                + r.id
                + " to node id="
                + node.id
                + ": the node is "
                + node.backupState
                + (node.pendingWrite != null ? " (write " + node.pendingWrite.sequence + ")" : "")
                + "; attaching a second backup to a node is a bug, roll the prepared backup back");
      }
    }
    r.prepared = null;
    WriteAck ack;
    try {
      ack = backups.queueAttached(b, r.own);
    } catch (RuntimeException e) {
      counters.increment(CacheCounter.PREPARED_ROLLED_BACK);
      throw e;
    }
    int[] host =
        b.statePositions.length == 0 ? b.hostSlots : java.util.Arrays.copyOf(b.hostSlots, b.pages);
    for (RadixNode node : chain) {
      ledger.account(node, -1);
      node.hostSlots = host;
      node.hostOffset = (node.depth - node.keyLength - b.startToken) / pageSize;
      for (int i = 0; i < b.statePositions.length; i++) {
        if (b.statePositions[i] == node.depth && node.stateSlots != null) {
          node.hostStateSlots = b.hostState(i, snapshotSlots);
        }
      }
      node.backupState = BackupState.PENDING;
      node.pendingWrite = ack;
      ledger.account(node, +1);
      ack.nodes.add(node);
    }
    ledger.reservedHostPages -= b.hostSlots.length;
    counters.increment(CacheCounter.PREPARED_ATTACHED);
  }

  /** Rolls the request's prepared backup back at this (replicated) point. */
  void rollBack(RequestState r) {
    PreparedBackup b = r.prepared;
    r.prepared = null;
    backups.retire(b);
    counters.increment(CacheCounter.PREPARED_ROLLED_BACK);
  }
}
