package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;

/**
 * Load-backs, host to device (CACHE.md §10): the evicted chain of a host hit gets device
 * slots (evicting device leaves if short; all or nothing), its copies are queued layer by layer
 * so that the model's layer i can start once layer i is loaded, and the chain stays locked until
 * its ack in the load FIFO commits.
 *
 * <p>Replicated state only, by type: the FIFO of {@link LoadBack} (which holds no copy handles)
 * and its sequence counter; copies go out through the write-only {@link CopySink}, and copy
 * completion enters only through {@link #commitLoads} with the agreed count and failures. A
 * failed load marks the loaded nodes and every node below them untrusted: none is matched or
 * inserted through again, and each is deleted, host copy included, as soon as no lock holds it
 * (a failed copy and a host page whose checksum no longer matches look alike to the ranks).
 */
final class LoadBacks {
  private static final System.Logger LOG = System.getLogger(LoadBacks.class.getName());

  private final CacheTree tree;
  private final PoolLedger ledger;

  /** Device eviction, when the pool is short of the chain's pages. */
  private final Backups backups;

  private final CacheConfig config;

  /** Starts copies; write-only. */
  private final CopySink copies;

  /** Layers of the KV layout; 0 without memory. */
  private final int layers;

  /** Whether there is a host tier with a transfer engine to copy through. */
  private final boolean hostTier;

  private final CacheCounters counters;

  /** Broken variants for the regression proofs; all off outside them. */
  private final RuleVariants rules;

  final ArrayDeque<LoadBack> loads = new ArrayDeque<>();
  long loadSequence;

  LoadBacks(
      CacheTree tree,
      PoolLedger ledger,
      Backups backups,
      CacheConfig config,
      CopySink copies,
      int layers,
      boolean hostTier,
      CacheCounters counters,
      RuleVariants rules) {
    this.rules = rules;
    this.tree = tree;
    this.ledger = ledger;
    this.backups = backups;
    this.config = config;
    this.copies = copies;
    this.layers = layers;
    this.hostTier = hostTier;
    this.counters = counters;
  }

  /**
   * Loads the evicted chain below {@code lastDevice} down to {@code lastHost} back to the device,
   * all or nothing. The caller holds a lock on {@code lastDevice}.
   *
   * @return the load, or null if skipped (threshold, quota, no memory, device short)
   */
  LoadBack loadBack(RadixNode lastDevice, RadixNode lastHost, int quotaPages) {
    if (!hostTier || lastHost == lastDevice) {
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
    boolean lockFirst = !rules.evictBeforeLockingLoadBack;
    if (lockFirst) {
      tree.lock(lastHost);
    }
    // Committed host snapshots load with the chain, in the same batches (HYBRID.md §5).
    int states = 0;
    for (RadixNode n = lastHost; n != lastDevice; n = n.parent) {
      if (n.hostStateSlots != null) {
        states += n.hostStateSlots.length;
      }
    }
    int kvPages = pages;
    pages += states;
    int free = ledger.devicePool.free();
    if (free < pages) {
      long hostEvictions = counters.get(CacheCounter.HOST_EVICTIONS);
      backups.evictDevice(pages - free);
      if (!lockFirst && counters.get(CacheCounter.HOST_EVICTIONS) != hostEvictions) {
        rules.fired++;
      }
    }
    if (!lockFirst) {
      tree.lock(lastHost);
    }
    if (ledger.devicePool.free() < pages) {
      tree.unlock(lastHost);
      return null;
    }
    ArrayList<RadixNode> chain = new ArrayList<>(count);
    for (RadixNode n = lastHost; n != lastDevice; n = n.parent) {
      chain.add(n);
    }
    java.util.Collections.reverse(chain);
    SlotRuns deviceRuns = new SlotRuns();
    ledger.devicePool.allocate(pages, deviceRuns);
    int[] device = deviceRuns.toArray(0, pages, ledger.devicePool);
    int[] host = new int[pages];
    int offset = 0;
    for (RadixNode n : chain) {
      System.arraycopy(n.hostSlots, n.hostOffset, host, offset, n.pageCount);
      offset += n.pageCount;
    }
    for (RadixNode n : chain) {
      if (n.hostStateSlots != null) {
        System.arraycopy(n.hostStateSlots, 0, host, offset, n.hostStateSlots.length);
        offset += n.hostStateSlots.length;
      }
    }
    TransferBatch[] batches = new TransferBatch[layers];
    for (int layer = 0; layer < layers; layer++) {
      batches[layer] =
          TransferBatch.oneLayer(TransferDirection.HOST_TO_DEVICE, device, host, layer);
    }
    try {
      copies.load(batches);
    } catch (CopySink.SubmitFailure f) {
      if (f.started() == 0) {
        deviceRuns.release(ledger.devicePool, 0, pages);
      } else {
        // Earlier layers are still writing these pages: they cannot be reused, so they stay
        // allocated (a leak the invariant checker reports) rather than corrupt later data.
        LOG.log(
            System.Logger.Level.ERROR,
            "load-back submission failed at layer "
                + f.started()
                + "; "
                + pages
                + " device pages stay allocated",
            f.engineFailure());
      }
      tree.unlock(lastHost);
      throw f.engineFailure();
    }
    counters.increment(CacheCounter.LOADS_REGISTERED);
    LoadBack op = new LoadBack(loadSequence++, chain, lastHost, layers, pages);
    offset = 0;
    int stateOffset = kvPages;
    for (RadixNode n : chain) {
      ledger.account(n, -1);
      n.deviceRuns = deviceRuns.slice(offset, n.pageCount);
      if (n.hostStateSlots != null) {
        int s = n.hostStateSlots.length;
        n.stateSlots = Arrays.copyOfRange(device, stateOffset, stateOffset + s);
        stateOffset += s;
      }
      n.pendingLoad = op;
      n.parent.residentChildren++;
      ledger.changed.mark(n.parent);
      ledger.account(n, +1);
      tree.events.stored(CacheMedium.DEVICE, n);
      offset += n.pageCount;
    }
    loads.add(op);
    return op;
  }

  void commitLoads(int n, BitSet failed) {
    Backups.checkCount("loads", n, loads.size());
    copies.committedLoads(n);
    for (int i = 0; i < n; i++) {
      LoadBack op = loads.poll();
      boolean fail = failed.get(i);
      if (fail) {
        counters.increment(CacheCounter.LOADS_FAILED);
      } else {
        counters.increment(CacheCounter.LOADS_COMMITTED);
      }
      ArrayList<RadixNode> affected = fail ? markFailed(op) : null;
      for (RadixNode node : op.nodes) {
        if (node.pendingLoad == op) {
          ledger.changed.mark(node);
          node.pendingLoad = null;
        }
      }
      op.committed = true;
      op.failed = fail;
      tree.unlock(op.lockNode);
      if (fail) {
        LOG.log(
            System.Logger.Level.WARNING,
            "load-back copy failed (load sequence {0}, {1} pages): pages invalidated",
            op.sequence,
            op.pages);
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
    // The host copy goes too: a load fails on a copy error or on host bytes that no longer
    // match their checksum (HostChecksums), and the agreed failure bit cannot tell which, so a
    // second load of the same host pages could fail the same way forever. The next request
    // recomputes what the failed load would have supplied.
    for (RadixNode n : ops) {
      tree.markInvalid(n, RadixNode.UNTRUSTED);
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
    SubtreeWalk.walk(
        n,
        true,
        new SubtreeWalk.Visitor() {
          @Override
          public void pre(RadixNode c) {
            tree.markInvalid(c, RadixNode.UNTRUSTED);
          }

          @Override
          public void post(RadixNode c) {
            out.add(c);
          }
        });
  }
}
