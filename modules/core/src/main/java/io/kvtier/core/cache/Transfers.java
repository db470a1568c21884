package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.Optional;

/**
 * The controller between the tiers: backup registration (device to host), load-back (host to
 * device) and the two FIFO ack queues with their commit step (HICACHE-SPEC §8–§10).
 *
 * <p>Every decision here reads replicated state only. Copy completion is consulted in exactly two
 * places, both rank-local and both deciding nothing: {@link #readyWrites()} / {@link
 * #readyLoads()} count finished copies from the FIFO heads, and {@link #localWriteFailures} /
 * {@link #localLoadFailures} report failed ones. Their answers enter the tree only through
 * {@link #commitWrites} and {@link #commitLoads}, which take the agreed count and failure set as
 * arguments, so a multi-rank caller can reduce them first.
 *
 * <p>A failed write is rolled back at its commit: host slots freed, state back to {@code NONE};
 * a child whose parent is not {@code COMMITTED} at its commit is rolled back too, which keeps
 * committed backups prefix-closed. A failed load marks the loaded nodes device-invalid and every
 * node below them untrusted; neither is matched or inserted through again, and each leaves the
 * device (loaded nodes are demoted to their good host copy, untrusted nodes are deleted) as soon
 * as no lock holds it.
 */
final class Transfers {
  private static final System.Logger LOG = System.getLogger(Transfers.class.getName());

  private final CacheTree tree;
  private final CacheConfig config;
  private final Optional<KvMemory> memory;
  private final boolean hostTier;
  private final long writeThreshold;
  Evictor evictor;

  final ArrayDeque<WriteAck> writes = new ArrayDeque<>();
  final ArrayDeque<LoadBack> loads = new ArrayDeque<>();
  private long writeSequence;
  private long loadSequence;
  /** Pages of write-back victims whose backup is pending: freed at their commit. */
  long writeBackPages;

  Transfers(CacheTree tree, CacheConfig config, Optional<KvMemory> memory) {
    this.tree = tree;
    this.config = config;
    this.memory = memory;
    this.hostTier = config.hostPages() > 0;
    this.writeThreshold =
        switch (config.writePolicy()) {
          case WRITE_THROUGH -> 1;
          case WRITE_THROUGH_SELECTIVE -> config.writeThroughThreshold();
          case WRITE_BACK -> Long.MAX_VALUE;
        };
  }

  boolean hostTier() {
    return hostTier;
  }

  boolean writeBack() {
    return config.writePolicy() == WritePolicy.WRITE_BACK;
  }

  boolean writeThroughWanted(RadixNode n) {
    return n.hitCount >= writeThreshold && n.hostSlots == null && n.deviceSlots != null
        && n.invalid == 0 && hostTier;
  }

  // ---------------------------------------------------------------- backups

  /**
   * Registers a backup of a resident node: allocates host slots (evicting host leaves if short),
   * queues the copy and makes the node {@code PENDING}. Backs up only below a backed-up parent;
   * with {@code withAncestors} the ancestors without a backup join the same ack, parents first.
   *
   * @param evictAfter free the node's device slots at the commit (write-back eviction)
   * @return false if there is no host tier, the node is not eligible or host slots are short
   */
  boolean registerBackup(RadixNode node, boolean withAncestors, boolean evictAfter) {
    if (!hostTier || node.parent == null || node.deviceSlots == null || node.hostSlots != null
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
    int free = tree.hostPool.free();
    if (free < pages) {
      // Host eviction removes host-only leaves; the chain is resident, so it is never touched.
      evictor.evictHost(pages - free);
      if (tree.hostPool.free() < pages) {
        return false;
      }
    }
    RadixNode[] chain = new RadixNode[count];
    int i = count;
    for (RadixNode n = node; i > 0; n = n.parent) {
      chain[--i] = n;
    }
    int[] host = new int[pages];
    int[] device = new int[pages];
    tree.hostPool.allocate(pages, host, 0);
    int offset = 0;
    for (RadixNode n : chain) {
      System.arraycopy(n.deviceSlots, n.deviceOffset, device, offset, n.pageCount);
      offset += n.pageCount;
    }
    TransferHandle handle;
    try {
      handle = memory.orElseThrow().engine().orElseThrow().submit(
          TransferBatch.allLayers(TransferDirection.DEVICE_TO_HOST, device, host));
    } catch (RuntimeException e) {
      tree.hostPool.release(host, 0, pages);
      throw e;
    }
    WriteAck ack = new WriteAck(writeSequence++, handle);
    offset = 0;
    for (RadixNode n : chain) {
      tree.account(n, -1);
      n.hostSlots = host;
      n.hostOffset = offset;
      n.backupState = BackupState.PENDING;
      n.pendingWrite = ack;
      tree.account(n, +1);
      ack.nodes.add(n);
      offset += n.pageCount;
    }
    if (evictAfter) {
      node.evictAfterBackup = true;
      ack.writeBackPages = node.pageCount;
      writeBackPages += node.pageCount;
    }
    writes.add(ack);
    return true;
  }

  int readyWrites() {
    int ready = 0;
    for (WriteAck ack : writes) {
      if (!ack.handle.isDone()) {
        break;
      }
      ready++;
    }
    return ready;
  }

  BitSet localWriteFailures(int n) {
    checkCount("writes", n, writes.size());
    BitSet failed = new BitSet();
    int i = 0;
    for (WriteAck ack : writes) {
      if (i == n) {
        break;
      }
      if (!ack.handle.isDone()) {
        throw new IllegalStateException("write ack " + i + " (sequence " + ack.sequence
            + ") has not finished copying on this rank: pass at most readyWritePrefix() acks");
      }
      if (ack.handle.failure().isPresent()) {
        failed.set(i);
      }
      i++;
    }
    return failed;
  }

  void commitWrites(int n, BitSet failed) {
    checkCount("writes", n, writes.size());
    for (int i = 0; i < n; i++) {
      WriteAck ack = writes.poll();
      boolean fail = failed.get(i);
      writeBackPages -= ack.writeBackPages;
      if (fail) {
        LOG.log(System.Logger.Level.WARNING,
            "backup copy failed (write sequence {0}, {1} pages): rolled back, host slots freed",
            ack.sequence, ack.pages());
      }
      for (RadixNode node : ack.nodes) {
        commitWrite(node, fail);
      }
    }
  }

  private void commitWrite(RadixNode node, boolean fail) {
    node.pendingWrite = null;
    RadixNode parent = node.parent;
    boolean parentCommitted =
        parent.parent == null || parent.backupState == BackupState.COMMITTED;
    tree.account(node, -1);
    if (fail || !parentCommitted || node.invalid == RadixNode.UNTRUSTED) {
      tree.hostPool.release(node.hostSlots, node.hostOffset, node.pageCount);
      node.hostSlots = null;
      node.backupState = BackupState.NONE;
    } else {
      node.backupState = BackupState.COMMITTED;
    }
    tree.account(node, +1);
    boolean evict = node.evictAfterBackup;
    node.evictAfterBackup = false;
    if (node.invalid != 0) {
      tree.releaseInvalid(node);
    } else if (evict && node.backupState == BackupState.COMMITTED
        && CacheTree.isDeviceCandidate(node)) {
      tree.demote(node);
    } else {
      tree.keyChanged(node);
    }
  }

  // ---------------------------------------------------------------- loads

  /**
   * Loads the evicted chain below {@code lastDevice} down to {@code lastHost} back to the device,
   * all or nothing. The caller holds a lock on {@code lastDevice}.
   *
   * @return the load, or null if skipped (threshold, quota, no memory, device short)
   */
  LoadBack loadBack(RadixNode lastDevice, RadixNode lastHost, int quotaPages) {
    if (memory.isEmpty() || !hostTier || lastHost == lastDevice) {
      return null;
    }
    int pages = 0;
    int count = 0;
    for (RadixNode n = lastHost; n != lastDevice; n = n.parent) {
      pages += n.pageCount;
      count++;
    }
    if (pages < config.loadBackThreshold() || pages > quotaPages) {
      return null;
    }
    // Lock first: the eviction below may back up (write-back) and so evict host leaves.
    tree.lock(lastHost);
    int free = tree.devicePool.free();
    if (free < pages) {
      evictor.evictDevice(pages - free);
      if (tree.devicePool.free() < pages) {
        tree.unlock(lastHost);
        return null;
      }
    }
    ArrayList<RadixNode> chain = new ArrayList<>(count);
    for (RadixNode n = lastHost; n != lastDevice; n = n.parent) {
      chain.add(n);
    }
    java.util.Collections.reverse(chain);
    int[] device = new int[pages];
    int[] host = new int[pages];
    tree.devicePool.allocate(pages, device, 0);
    int offset = 0;
    for (RadixNode n : chain) {
      System.arraycopy(n.hostSlots, n.hostOffset, host, offset, n.pageCount);
      offset += n.pageCount;
    }
    KvMemory mem = memory.get();
    TransferHandle[] handles = new TransferHandle[mem.layers()];
    for (int layer = 0; layer < handles.length; layer++) {
      try {
        handles[layer] = mem.engine().orElseThrow().submit(
            TransferBatch.oneLayer(TransferDirection.HOST_TO_DEVICE, device, host, layer));
      } catch (RuntimeException e) {
        if (layer == 0) {
          tree.devicePool.release(device, 0, pages);
        } else {
          // Earlier layers are still writing these pages: they cannot be reused, so they stay
          // allocated (a leak the invariant checker reports) rather than corrupt later data.
          LOG.log(System.Logger.Level.ERROR, "load-back submission failed at layer " + layer
              + "; " + pages + " device pages stay allocated", e);
        }
        tree.unlock(lastHost);
        throw e;
      }
    }
    LoadBack op = new LoadBack(loadSequence++, chain, lastHost, handles, pages);
    offset = 0;
    for (RadixNode n : chain) {
      tree.account(n, -1);
      n.deviceSlots = device;
      n.deviceOffset = offset;
      n.pendingLoad = op;
      n.parent.residentChildren++;
      tree.account(n, +1);
      offset += n.pageCount;
    }
    loads.add(op);
    return op;
  }

  int readyLoads() {
    int ready = 0;
    for (LoadBack op : loads) {
      if (!op.copiesDone()) {
        break;
      }
      ready++;
    }
    return ready;
  }

  BitSet localLoadFailures(int n) {
    checkCount("loads", n, loads.size());
    BitSet failed = new BitSet();
    int i = 0;
    for (LoadBack op : loads) {
      if (i == n) {
        break;
      }
      if (!op.copiesDone()) {
        throw new IllegalStateException("load ack " + i + " (sequence " + op.sequence
            + ") has not finished copying on this rank: pass at most readyLoadPrefix() acks");
      }
      if (op.copyFailed()) {
        failed.set(i);
      }
      i++;
    }
    return failed;
  }

  void commitLoads(int n, BitSet failed) {
    checkCount("loads", n, loads.size());
    for (int i = 0; i < n; i++) {
      LoadBack op = loads.poll();
      boolean fail = failed.get(i);
      ArrayList<RadixNode> affected = fail ? markFailed(op) : null;
      for (RadixNode node : op.nodes) {
        if (node.pendingLoad == op) {
          node.pendingLoad = null;
        }
      }
      op.committed = true;
      op.failed = fail;
      tree.unlock(op.lockNode);
      if (fail) {
        LOG.log(System.Logger.Level.WARNING,
            "load-back copy failed (load sequence {0}, {1} pages): pages invalidated",
            op.sequence, op.pages);
        for (RadixNode node : affected) {
          tree.releaseInvalid(node);
        }
      }
    }
  }

  /** Marks a failed load's nodes and everything computed below them; returns them leaves first. */
  private ArrayList<RadixNode> markFailed(LoadBack op) {
    ArrayList<RadixNode> ops = new ArrayList<>(op.nodes);
    ops.sort(Comparator.comparingInt((RadixNode n) -> n.depth).reversed());
    for (RadixNode n : ops) {
      tree.markInvalid(n, RadixNode.DEVICE_INVALID);
    }
    ArrayList<RadixNode> affected = new ArrayList<>();
    for (RadixNode n : ops) {
      if (n.children != null) {
        for (int s = 0; s < n.children.slotCount(); s++) {
          for (RadixNode c = n.children.valueAt(s); c != null; c = c.sameKeyNext) {
            if (c.invalid == 0) {
              markUntrusted(c, affected);
            }
          }
        }
      }
    }
    affected.addAll(ops);
    return affected;
  }

  private void markUntrusted(RadixNode n, ArrayList<RadixNode> out) {
    tree.markInvalid(n, RadixNode.UNTRUSTED);
    if (n.children != null) {
      for (int s = 0; s < n.children.slotCount(); s++) {
        for (RadixNode c = n.children.valueAt(s); c != null; c = c.sameKeyNext) {
          markUntrusted(c, out);
        }
      }
    }
    out.add(n);
  }

  int outstanding() {
    return writes.size() + loads.size();
  }

  private static void checkCount(String queue, int n, int size) {
    if (n < 0 || n > size) {
      throw new IllegalArgumentException(
          "cannot commit " + n + " " + queue + ": " + size + " are pending; pass 0.." + size);
    }
  }
}
