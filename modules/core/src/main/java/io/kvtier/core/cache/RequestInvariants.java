package io.kvtier.core.cache;

/**
 * The active requests and explicit locks: each request locks a node of the tree at its prefix's
 * end through resident nodes only, owns its device pages, snapshots and tail ({@link
 * SnapshotInvariants#request}), keeps its key copy within its tokens, and holds a well-formed
 * prepared backup if any; each {@link CacheLock} holds a node of the tree.
 */
final class RequestInvariants {
  /**
   * What the requests hold.
   *
   * @param requestPages device pages the requests own (pages, snapshots, tails)
   * @param reservedHostPages host slots their prepared backups reserved
   * @param streamingRequests requests whose prepared backup has streamed a layer
   */
  record Status(long requestPages, long reservedHostPages, int streamingRequests) {}

  private final InvariantRun run;
  private final SnapshotInvariants snapshots;
  private long requestPages;
  private long reservedHostPages;
  private int streamingRequests;

  private RequestInvariants(InvariantRun run) {
    this.run = run;
    this.snapshots = new SnapshotInvariants(run.snapshotSlots);
  }

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  static Status check(InvariantRun run) {
    return new RequestInvariants(run).all();
  }

  private Status all() {
    LongMap<RequestState> requests = run.cache.rooms().requests();
    for (int s = 0; s < requests.slotCount(); s++) {
      RequestState r = requests.valueAt(s);
      if (r != null) {
        request(r, requests.keyAt(s));
      }
    }
    LongMap<CacheLock> locks = run.cache.rooms().locks();
    for (int s = 0; s < locks.slotCount(); s++) {
      CacheLock lock = locks.valueAt(s);
      if (lock != null && !run.inTree(lock.node)) {
        fail(lock + " holds a node that is not in the tree");
      }
    }
    return new Status(requestPages, reservedHostPages, streamingRequests);
  }

  private void request(RequestState r, long key) {
    if (r.id != key || !run.inTree(r.lockNode) || r.prefixLength != r.lockNode.depth) {
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
      run.slots.device(slot, "request " + r.id);
    }
    requestPages += r.ownCount();
    requestPages += snapshots.request(r, run.slots);
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
      run.slots.keyView(copy.chunk, copy.end - copy.from);
    }
    prepared(r);
  }

  private void prepared(RequestState r) {
    PreparedBackup b = r.prepared;
    if (b == null) {
      return;
    }
    if (b.requestId != r.id
        || b.startToken != r.prefixLength
        || b.pages < 1
        || b.pages > r.ownCount()
        || b.hostSlots.length != b.pages + b.statePositions.length * run.snapshotSlots
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
      run.slots.host(b.hostSlots[i], "prepared backup of request " + r.id);
    }
    reservedHostPages += b.hostSlots.length;
    streamingRequests += b.streamedCount > 0 ? 1 : 0;
    run.slots.deferred(b.heldDeviceSlots, "prepared backup of request " + r.id);
  }
}
