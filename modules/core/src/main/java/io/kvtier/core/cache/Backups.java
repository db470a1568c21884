package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.BitSet;

/**
 * Backups, device to host (CACHE.md §6, §8, §9, §11): registration, the copies of prepared
 * backups, device eviction (which under write-back backs a victim up first) and the write FIFO
 * with its commit step.
 *
 * <p>Replicated state only, by type: the FIFO of {@link WriteAck} (which holds no copy handles),
 * the sequence counter and the page counts. Copies are started through a {@link CopySink}, which
 * returns nothing readable; neither this class nor the rooms that hold it can reach a copy
 * handle, the transfer engine or any completion state. Copy completion enters only through
 * {@link #commitWrites}, which takes the agreed count and failure set as arguments, so that a
 * multi-rank caller reduces the rank-local answers of {@link LocalProgress} first.
 *
 * <p>A failed write is rolled back at its commit: host slots freed, state back to {@code NONE};
 * a child whose parent is not {@code COMMITTED} at its commit is rolled back too, which keeps
 * committed backups prefix-closed, and so is a node computed on a load-back that failed (it is
 * untrusted) or that has not committed yet (it may still fail), so that no such KV becomes a
 * good host copy or reaches L3 (CACHE.md §10). A host commit is told to the L3 tier, which may write the node
 * on.
 */
final class Backups {
  private static final System.Logger LOG = System.getLogger(Backups.class.getName());
  private static final TransferBatch[] NO_BATCHES = new TransferBatch[0];

  private final CacheTree tree;
  private final PoolLedger ledger;
  private final Evictor evictor;

  /** Told of every host commit, which may write the node to L3. */
  private final L3Port l3;

  private final CacheConfig config;

  /** Starts copies; write-only (see the class comment). */
  private final CopySink copies;

  /** Whether there is a host tier with a transfer engine to copy through. */
  private final boolean hostTier;

  final CacheCounters counters;

  /** Broken variants for the regression proofs; all off outside them. */
  private final RuleVariants rules;

  final ArrayDeque<WriteAck> writes = new ArrayDeque<>();
  long writeSequence;

  Backups(
      CacheTree tree,
      PoolLedger ledger,
      Evictor evictor,
      L3Port l3,
      CacheConfig config,
      CopySink copies,
      boolean hostTier,
      CacheCounters counters,
      RuleVariants rules) {
    this.rules = rules;
    this.tree = tree;
    this.ledger = ledger;
    this.evictor = evictor;
    this.l3 = l3;
    this.config = config;
    this.copies = copies;
    this.counters = counters;
    this.hostTier = hostTier;
  }

  boolean hostTier() {
    return hostTier;
  }

  boolean writeBack() {
    return config.writePolicy() == WritePolicy.WRITE_BACK;
  }

  // ---------------------------------------------------------------- eviction, counted

  /**
   * Frees device pages (CACHE.md §6) and counts those freed now: a committed victim is
   * demoted to host-only, a victim without backup is deleted, or under write-back first backed up
   * (its pages are freed at that backup's commit).
   *
   * @param pages pages wanted, counting those already awaiting write-back
   * @return pages freed now: a victim's pages that a streamed copy still reads become free only
   *     at that copy's commit (CACHE.md §5), so they are evicted but not counted here
   */
  int evictDevice(int pages) {
    int freed = 0;
    int freeBefore = ledger.devicePool.free();
    boolean writeBack = writeBack();
    while (ledger.devicePool.free() - freeBefore + ledger.writeBackPages < pages) {
      RadixNode victim = evictor.pollDevice();
      if (victim == null) {
        break;
      }
      evictor.observer.victim(false, victim);
      int victimPages =
          victim.pageCount + (victim.stateSlots == null ? 0 : victim.stateSlots.length);
      if (victim.backupState == BackupState.COMMITTED) {
        tree.demote(victim);
        freed += victimPages;
      } else if (writeBack && registerBackup(victim, true, true)) {
        // Freed at the commit of this backup; counted in the ledger's writeBackPages.
        continue;
      } else {
        tree.delete(victim);
        freed += victimPages;
      }
    }
    counters.add(CacheCounter.DEVICE_EVICTIONS, freed);
    return ledger.devicePool.free() - freeBefore;
  }

  /** Host eviction, counted. */
  int evictHost(int pages) {
    return evictor.evictHost(pages);
  }

  // ---------------------------------------------------------------- backups

  /**
   * The explicit backup of a node ({@link RankCache#backup}): an ordinary registration.
   *
   * @throws IllegalStateException if the node's backup is {@code PENDING}: a second backup of a
   *     pending node is a bug
   */
  boolean backup(RadixNode node) {
    if (node.backupState == BackupState.PENDING) {
      throw new IllegalStateException(
          "backup of node id="
              + node.id
              + ": its backup (write "
              + node.pendingWrite.sequence
              + ") is still PENDING; attaching a second backup is a"
              + " bug, wait for commitWrites");
    }
    return registerBackup(node, false, false);
  }

  /**
   * Registers a backup of a resident node: allocates host slots (evicting host leaves if short),
   * queues the copy and makes the node {@code PENDING}. Backs up only below a backed-up parent;
   * with {@code withAncestors} the ancestors without a backup join the same ack, parents first.
   *
   * @param evictAfter free the node's device slots at the commit (write-back eviction)
   * @return false if there is no host tier, the node is not eligible or host slots are short
   */
  boolean registerBackup(RadixNode node, boolean withAncestors, boolean evictAfter) {
    if (!hostTier
        || node.parent == null
        || !node.resident()
        || node.hostSlots != null
        || node.invalid != 0) {
      return false;
    }
    int pages = node.pageCount;
    int count = 1;
    RadixNode top = node;
    while (top.parent.parent != null && top.parent.hostSlots == null) {
      if (!withAncestors || top.parent.invalid != 0) {
        return false;
      }
      top = top.parent;
      pages += top.pageCount;
      count++;
    }
    RadixNode[] chain = new RadixNode[count];
    int i = count;
    for (RadixNode n = node; i > 0; n = n.parent) {
      chain[--i] = n;
    }
    // Snapshot slots ride the same ack and batch as the pages (HYBRID.md §5).
    int states = 0;
    for (RadixNode n : chain) {
      if (n.stateSlots != null) {
        states += n.stateSlots.length;
      }
    }
    int total = pages + states;
    int free = ledger.hostPool.free();
    if (free < total) {
      // Host eviction removes host-only leaves; the chain is resident, so it is never touched.
      evictHost(total - free);
      if (ledger.hostPool.free() < total) {
        return false;
      }
    }
    int[] host = new int[pages];
    int[] device = new int[total];
    ledger.hostPool.allocate(pages, host, 0);
    int offset = 0;
    for (RadixNode n : chain) {
      n.copyDeviceSlots(device, offset, ledger.devicePool);
      offset += n.pageCount;
    }
    int[] hostStates = null;
    int[] batchHost = host;
    if (states > 0) {
      hostStates = new int[states];
      ledger.hostPool.allocate(states, hostStates, 0);
      batchHost = Arrays.copyOf(host, total);
      System.arraycopy(hostStates, 0, batchHost, pages, states);
      for (RadixNode n : chain) {
        if (n.stateSlots != null) {
          System.arraycopy(n.stateSlots, 0, device, offset, n.stateSlots.length);
          offset += n.stateSlots.length;
        }
      }
    }
    try {
      copies.write(TransferBatch.allLayers(TransferDirection.DEVICE_TO_HOST, device, batchHost));
    } catch (RuntimeException e) {
      ledger.hostPool.release(host, 0, pages);
      if (hostStates != null) {
        ledger.hostPool.release(hostStates, 0, states);
      }
      throw e;
    }
    counters.increment(CacheCounter.BACKUPS_REGISTERED);
    WriteAck ack = new WriteAck(writeSequence++);
    offset = 0;
    int stateOffset = 0;
    for (RadixNode n : chain) {
      ledger.account(n, -1);
      n.hostSlots = host;
      n.hostOffset = offset;
      if (n.stateSlots != null) {
        int s = n.stateSlots.length;
        n.hostStateSlots = Arrays.copyOfRange(hostStates, stateOffset, stateOffset + s);
        stateOffset += s;
      }
      n.backupState = BackupState.PENDING;
      n.pendingWrite = ack;
      ledger.account(n, +1);
      ack.nodes.add(n);
      offset += n.pageCount;
    }
    if (evictAfter) {
      ledger.changed.mark(node);
      node.evictAfterBackup = true;
      int freedAtCommit = node.pageCount + (node.stateSlots == null ? 0 : node.stateSlots.length);
      ack.writeBackPages = freedAtCommit;
      ledger.writeBackPages += freedAtCommit;
    }
    writes.add(ack);
    return true;
  }

  void commitWrites(int n, BitSet failed) {
    checkCount("writes", n, writes.size());
    copies.committedWrites(n);
    for (int i = 0; i < n; i++) {
      WriteAck ack = writes.poll();
      if (ack.heldDeviceSlots != null) {
        // Every rank has finished the streamed copies that read these device pages.
        ledger.devicePool.unhold(ack.heldDeviceSlots);
      }
      if (ack.isRetirement()) {
        // Every rank has finished (or failed) the copies into these slots: reuse is safe now.
        ledger.hostPool.release(ack.retiredHostSlots, 0, ack.retiredHostSlots.length);
        ledger.reservedHostPages -= ack.retiredHostSlots.length;
        continue;
      }
      boolean fail = failed.get(i);
      ledger.writeBackPages -= ack.writeBackPages;
      if (fail) {
        counters.increment(CacheCounter.BACKUPS_FAILED);
      } else {
        counters.increment(CacheCounter.BACKUPS_COMMITTED);
      }
      if (fail) {
        LOG.log(
            System.Logger.Level.WARNING,
            "backup copy failed (write sequence {0}, {1} pages): rolled back, host slots freed",
            ack.sequence,
            ack.pages());
      }
      for (RadixNode node : ack.nodes) {
        commitWrite(node, fail);
      }
    }
  }

  private void commitWrite(RadixNode node, boolean fail) {
    node.pendingWrite = null;
    RadixNode parent = node.parent;
    boolean parentCommitted = parent.parent == null || parent.backupState == BackupState.COMMITTED;
    ledger.account(node, -1);
    if (fail || !parentCommitted || node.invalid == RadixNode.UNTRUSTED || onPendingLoad(node)) {
      ledger.hostPool.release(node.hostSlots, node.hostOffset, node.pageCount);
      node.hostSlots = null;
      tree.releaseHostSnapshot(node);
      node.backupState = BackupState.NONE;
    } else {
      node.backupState = BackupState.COMMITTED;
    }
    ledger.account(node, +1);
    if (node.backupState == BackupState.COMMITTED) {
      tree.events.stored(CacheMedium.HOST, node);
      l3.maybeWrite(node);
    }
    boolean evict = node.evictAfterBackup;
    node.evictAfterBackup = false;
    if (node.invalid != 0) {
      tree.releaseInvalid(node);
    } else if (evict
        && node.backupState == BackupState.COMMITTED
        && CacheTree.isDeviceCandidate(node)) {
      counters.add(CacheCounter.DEVICE_EVICTIONS, node.pageCount);
      tree.demote(node);
    } else {
      tree.keyChanged(node);
    }
  }

  /**
   * Whether an ancestor of {@code node} is still being loaded back: then the node's KV was
   * computed on pages whose load may yet fail on some rank, and a committed backup would turn
   * data that is about to become untrusted into a good host copy and an L3 put. The rank
   * protocol commits loads before writes, so this holds only while the ancestor's load is not
   * finished everywhere; the backup is rolled back then (a write-through or hit registers it
   * again once the load has committed).
   */
  private static boolean onPendingLoad(RadixNode node) {
    for (RadixNode a = node.parent; a.parent != null; a = a.parent) {
      if (a.pendingLoad != null) {
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------- prepared-backup copies

  /**
   * Submits the copy of one layer of a prepared backup from the request's own pages into its
   * reserved host slots; the copy is kept rank-locally until the backup is attached or retired.
   */
  void streamLayer(PreparedBackup backup, SlotRuns own, int layer) {
    int[] device = streamSources(backup, own);
    copies.stream(
        backup.requestId,
        backup.layers,
        TransferBatch.oneLayer(
            TransferDirection.DEVICE_TO_HOST,
            device,
            Arrays.copyOf(backup.hostSlots, device.length),
            layer));
    if (rules.unheldStreamSources) {
      rules.fired++;
    } else if (backup.heldDeviceSlots == null) {
      // The copy reads these device pages until it is done on every rank, which the commit of
      // the ack that carries it (attached or retired) is the first replicated point to know:
      // until then a free of them (abort, a duplicate at the insert, eviction of the node that
      // adopted them after a rollback) is deferred, so no later owner writes under the copy.
      ledger.devicePool.hold(device);
      backup.heldDeviceSlots = device;
    }
  }

  /**
   * The device slots a prepared backup streams: the request's covered pages, then the slots of
   * each covered snapshot but the tail (HYBRID.md §5); the host side is the reservation's prefix
   * of the same length.
   */
  private int[] streamSources(PreparedBackup backup, SlotRuns own) {
    int[] pages = own.toArray(0, backup.pages, ledger.devicePool);
    int states = backup.streamedStates();
    if (states == 0) {
      return pages;
    }
    int s = config.snapshotSlots();
    int[] device = Arrays.copyOf(pages, backup.pages + states * s);
    for (int i = 0; i < states; i++) {
      System.arraycopy(backup.stateDevice[i], 0, device, backup.pages + i * s, s);
    }
    return device;
  }

  /**
   * Queues the one ack of an attached prepared backup: its streamed copies plus a catch-up copy
   * of every layer not streamed (one all-layer batch if none was), submitted now. The caller
   * puts the node in the returned ack. If a catch-up submission throws, a retirement ack is
   * queued instead (the slots are freed once the copies already running into them are done
   * everywhere) and the exception propagates.
   */
  WriteAck queueAttached(PreparedBackup backup, SlotRuns own) {
    int[] device = streamSources(backup, own);
    int[] host = Arrays.copyOf(backup.hostSlots, device.length);
    int missing = backup.layers - backup.streamedCount;
    TransferBatch[] catchUp;
    if (backup.streamedCount == 0) {
      // The tail, if covered, is the reservation's last slots: one all-layer batch for all.
      int[] all = device;
      if (backup.tail) {
        int s = config.snapshotSlots();
        all = Arrays.copyOf(device, device.length + s);
        System.arraycopy(
            backup.stateDevice[backup.statePositions.length - 1], 0, all, device.length, s);
      }
      catchUp =
          new TransferBatch[] {
            TransferBatch.allLayers(
                TransferDirection.DEVICE_TO_HOST, all, Arrays.copyOf(backup.hostSlots, all.length))
          };
    } else {
      catchUp = new TransferBatch[missing + (backup.tail ? 1 : 0)];
      int i = 0;
      for (int layer = 0; layer < backup.layers; layer++) {
        if (!backup.streamed(layer)) {
          catchUp[i++] =
              TransferBatch.oneLayer(TransferDirection.DEVICE_TO_HOST, device, host, layer);
        }
      }
      if (backup.tail) {
        // The runner rewrote the tail at every step; only now is it the state at the end.
        int s = config.snapshotSlots();
        catchUp[i] =
            TransferBatch.allLayers(
                TransferDirection.DEVICE_TO_HOST,
                backup.stateDevice[backup.statePositions.length - 1].clone(),
                Arrays.copyOfRange(backup.hostSlots, device.length, device.length + s));
      }
    }
    try {
      copies.writeWithStreamed(backup.requestId, catchUp);
    } catch (RuntimeException e) {
      // The sink filed what already runs under one group: pair it with a retirement.
      queueRetirement(backup);
      throw e;
    }
    counters.add(CacheCounter.CATCH_UP_LAYERS, missing);
    counters.increment(CacheCounter.BACKUPS_REGISTERED);
    WriteAck ack = new WriteAck(writeSequence++, null, backup.requestId, backup.heldDeviceSlots);
    writes.add(ack);
    return ack;
  }

  /**
   * Gives back the host slots of a prepared backup that is rolled back. Without a streamed copy
   * they are free at once. Otherwise copies may still be writing into them on some rank: they
   * join the write FIFO as a retirement ack and are freed at its commit, a replicated point
   * after which every rank has finished those copies, so no later user of the slots (a backup,
   * an L3 prefetch that writes host pages directly) can be overwritten by a stale copy. The
   * device pages the copies read stay held until the same commit (see {@link #streamLayer}).
   */
  void retire(PreparedBackup backup) {
    if (backup.streamedCount == 0 && rules.leakRolledBackReservation) {
      rules.fired++;
      return;
    }
    if (backup.streamedCount == 0) {
      ledger.hostPool.release(backup.hostSlots, 0, backup.hostSlots.length);
      ledger.reservedHostPages -= backup.hostSlots.length;
      return;
    }
    copies.writeWithStreamed(backup.requestId, NO_BATCHES);
    queueRetirement(backup);
  }

  private void queueRetirement(PreparedBackup backup) {
    writes.add(
        new WriteAck(
            writeSequence++, backup.hostSlots.clone(), backup.requestId, backup.heldDeviceSlots));
  }

  static void checkCount(String queue, int n, int size) {
    if (n < 0 || n > size) {
      throw new IllegalArgumentException(
          "cannot commit " + n + " " + queue + ": " + size + " are pending; pass 0.." + size);
    }
  }
}
