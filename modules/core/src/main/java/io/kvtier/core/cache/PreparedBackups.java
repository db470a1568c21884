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
  private final PoolLedger ledger;
  private final Backups backups;
  private final Evictor evictor;
  private final WriteTriggers triggers;
  private final CacheCounters counters;
  private final RuleVariants rules;
  private final int pageSize;
  private final int layers;
  private final boolean enabled;

  PreparedBackups(
      CacheTree tree,
      PoolLedger ledger,
      Backups backups,
      Evictor evictor,
      WriteTriggers triggers,
      CacheConfig config,
      int layers,
      boolean hasEngine,
      RuleVariants rules) {
    this.tree = tree;
    this.ledger = ledger;
    this.backups = backups;
    this.evictor = evictor;
    this.triggers = triggers;
    this.counters = backups.counters;
    this.rules = rules;
    this.pageSize = config.pageSize();
    this.layers = layers;
    this.enabled =
        hasEngine
            && config.hostPages() > 0
            && config.writePolicy() != WritePolicy.WRITE_BACK
            // Not yet with recurrent-state snapshots (HYBRID.md §5): a snapshot's backup rides
            // the node's registered backup instead.
            && config.snapshotSlots() == 0;
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
    int full = Math.min(r.ownCount(), (r.tokens.length - r.prefixLength) / pageSize);
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
    int more = full - have;
    int free = ledger.hostPool.free();
    if (free < more) {
      evictor.evictHost(more - free);
      if (ledger.hostPool.free() < more) {
        return false;
      }
    }
    int[] slots = b == null ? new int[full] : java.util.Arrays.copyOf(b.hostSlots, full);
    ledger.hostPool.allocate(more, slots, have);
    ledger.reservedHostPages += more;
    if (b == null) {
      r.prepared = new PreparedBackup(r.id, r.prefixLength, layers, full, slots);
      counters.preparedBackups++;
    } else {
      b.hostSlots = slots;
      b.pages = full;
    }
    return true;
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
    counters.streamedLayers++;
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
          tree.insert(
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
    return tree.insert(
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
   * Attaches the request's prepared backup to {@code node}: the node becomes {@code PENDING}
   * with the reserved host slots, and one ack joins the write FIFO.
   *
   * @throws IllegalStateException if the node is {@code PENDING} or backed up already: a second
   *     backup of a node is a bug
   */
  void attach(RequestState r, RadixNode node) {
    PreparedBackup b = r.prepared;
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
    r.prepared = null;
    WriteAck ack;
    try {
      ack = backups.queueAttached(b, r.own);
    } catch (RuntimeException e) {
      counters.preparedRolledBack++;
      throw e;
    }
    ledger.account(node, -1);
    node.hostSlots = b.hostSlots;
    node.hostOffset = 0;
    node.backupState = BackupState.PENDING;
    node.pendingWrite = ack;
    ledger.account(node, +1);
    ack.nodes.add(node);
    ledger.reservedHostPages -= b.pages;
    counters.preparedAttached++;
  }

  /** Rolls the request's prepared backup back at this (replicated) point. */
  void rollBack(RequestState r) {
    PreparedBackup b = r.prepared;
    r.prepared = null;
    backups.retire(b);
    counters.preparedRolledBack++;
  }
}
