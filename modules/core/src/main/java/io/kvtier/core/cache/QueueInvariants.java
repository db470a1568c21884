package io.kvtier.core.cache;

/**
 * The replicated queues against the tree and the rank-local progress: each write ack covers
 * nodes of the tree that name it (or retires host slots, which it owns), the write-back pages
 * add up; each L3 write covers nodes that name it and puts only their snapshots; each pending
 * prefetch locks a node of the tree and owns the host slots it still holds; each load-back
 * covers nodes that name it; and the rank-local copy groups pair with the queues one to one.
 */
final class QueueInvariants {
  /**
   * What the queues hold.
   *
   * @param reservedHostPages host slots that retirement acks and L3 prefetches hold
   */
  record Status(long reservedHostPages) {}

  private final InvariantRun run;
  private long reservedHostPages;

  private QueueInvariants(InvariantRun run) {
    this.run = run;
  }

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  /**
   * Checks the queues.
   *
   * @param run the run
   * @param requests the requests' status, for the streaming requests the copy groups pair with
   * @return what the queues hold
   */
  static Status check(InvariantRun run, RequestInvariants.Status requests) {
    QueueInvariants q = new QueueInvariants(run);
    q.writeAcks();
    if (run.l3 != null) {
      q.l3(run.l3);
    }
    q.pairing(requests.streamingRequests());
    q.loads();
    return new Status(q.reservedHostPages);
  }

  private void writeAcks() {
    long writeBack = 0;
    for (WriteAck ack : run.backups.writes) {
      run.slots.deferred(ack.heldDeviceSlots, "write ack " + ack.sequence);
      if (ack.isRetirement()) {
        if (!ack.nodes.isEmpty() || ack.writeBackPages != 0) {
          fail("retirement ack " + ack.sequence + " covers nodes or write-back pages");
        }
        for (int slot : ack.retiredHostSlots) {
          run.slots.host(slot, "retirement ack " + ack.sequence);
        }
        reservedHostPages += ack.retiredHostSlots.length;
        continue;
      }
      if (ack.nodes.isEmpty()) {
        fail("write ack " + ack.sequence + " covers no node and retires no slot");
      }
      writeBack += ack.writeBackPages;
      for (RadixNode n : ack.nodes) {
        if (!run.inTree(n) || n.pendingWrite != ack) {
          fail(
              "write ack "
                  + ack.sequence
                  + " covers "
                  + n
                  + " which is not in the tree or does not name it");
        }
      }
    }
    if (writeBack != run.ledger.writeBackPages) {
      fail("writeBackPages=" + run.ledger.writeBackPages + " but the acks hold " + writeBack);
    }
  }

  private void l3(L3Tier l3) {
    for (L3Write write : l3.writes.queue) {
      int pages = 0;
      for (RadixNode n : write.nodes) {
        if (!run.inTree(n) || n.pendingL3Write != write) {
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
    for (Prefetch op : l3.prefetches.pending) {
      if (op.lockNode != null && !run.inTree(op.lockNode)) {
        fail(op + " locks a node not in the tree: " + op.lockNode);
      }
      if (op.state == Prefetch.State.PROBING && op.hostSlots != null) {
        fail(op + " holds host slots while probing");
      }
      if (op.hostSlots != null
          && op.reservedPages != op.fetchPages + (op.snapshotSlots > 0 ? op.snapshotSlots : 0)) {
        fail(op + " reserved " + op.reservedPages + " slots for " + op.fetchPages + " pages");
      }
      for (int i = op.heldFrom; op.hostSlots != null && i < op.reservedPages; i++) {
        run.slots.host(op.hostSlots[i], op);
      }
      reservedHostPages += op.heldPages();
    }
    L3Progress progress = run.cache.rooms().l3().orElseThrow().progress();
    if (progress.putGroups() != l3.writes.queue.size()
        || progress.prefetchGroups() != l3.prefetches.pending.size()) {
      fail(
          "rank-local L3 work (puts="
              + progress.putGroups()
              + ", prefetches="
              + progress.prefetchGroups()
              + ") does not pair with the replicated queues (L3"
              + " writes="
              + l3.writes.queue.size()
              + ", pending prefetches="
              + l3.prefetches.pending.size()
              + ")");
    }
  }

  private void pairing(int streamingRequests) {
    LocalProgress progress = run.cache.rooms().localProgress();
    if (progress.writeGroups() != run.backups.writes.size()
        || progress.loadGroups() != run.loadBacks.loads.size()
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
              + run.backups.writes.size()
              + ", loads="
              + run.loadBacks.loads.size()
              + ", requests with streamed layers="
              + streamingRequests
              + ")");
    }
  }

  private void loads() {
    for (LoadBack op : run.loadBacks.loads) {
      if (op.committed || !run.inTree(op.lockNode)) {
        fail(op + " is committed or locks a node not in the tree");
      }
      for (RadixNode n : op.nodes) {
        if (!run.inTree(n) || n.pendingLoad != op) {
          fail(op + " covers " + n + " which is not in the tree or does not name it");
        }
      }
    }
  }
}
