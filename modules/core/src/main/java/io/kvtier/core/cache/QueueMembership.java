package io.kvtier.core.cache;

import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The first family of {@link CacheInvariants}: who is in which queued operation, collected once
 * before the node rules read it. Each node is in at most one write ack, load-back and L3 write; a
 * write ack lists parents before children; a prefetch is pending or DONE as its state says and is
 * filed under its own request; and every explicit lock (a request's, a {@link CacheLock}, a
 * load's anchor, a prefetch's anchor) is counted on its node for the lock count check.
 */
final class QueueMembership {
  /** Locks held on a node by something other than a locked child. */
  final Map<RadixNode, Integer> explicitLocks = new IdentityHashMap<>();

  final Map<RadixNode, WriteAck> ackOf = new IdentityHashMap<>();
  final Map<RadixNode, LoadBack> loadOf = new IdentityHashMap<>();
  final Map<RadixNode, L3Write> l3WriteOf = new IdentityHashMap<>();

  private QueueMembership() {}

  /** The explicit locks held on {@code n}. */
  int locksOn(RadixNode n) {
    return explicitLocks.getOrDefault(n, 0);
  }

  static QueueMembership collect(InvariantRun run) {
    QueueMembership m = new QueueMembership();
    m.requestsAndLocks(run.cache);
    m.loads(run.loadBacks);
    if (run.l3 != null) {
      m.l3(run.cache, run.l3);
    }
    m.acks(run.backups);
    return m;
  }

  private void lock(RadixNode n) {
    explicitLocks.merge(n, 1, Integer::sum);
  }

  private void requestsAndLocks(RankCache cache) {
    LongMap<RequestState> requests = cache.rooms().requests();
    for (int s = 0; s < requests.slotCount(); s++) {
      RequestState r = requests.valueAt(s);
      if (r != null) {
        lock(r.lockNode);
      }
    }
    LongMap<CacheLock> locks = cache.rooms().locks();
    for (int s = 0; s < locks.slotCount(); s++) {
      CacheLock lock = locks.valueAt(s);
      if (lock != null) {
        if (lock.released) {
          InvariantRun.fail(lock + " is released but still registered");
        }
        lock(lock.node);
      }
    }
  }

  private void loads(LoadBacks loadBacks) {
    for (LoadBack op : loadBacks.loads) {
      lock(op.lockNode);
      for (RadixNode n : op.nodes) {
        if (loadOf.put(n, op) != null) {
          InvariantRun.fail("node " + n + " is in two pending loads");
        }
      }
    }
  }

  private void l3(RankCache cache, L3Tier l3) {
    for (L3Write write : l3.writes.queue) {
      for (RadixNode n : write.nodes) {
        if (l3WriteOf.put(n, write) != null) {
          InvariantRun.fail("node " + n + " is in two pending L3 writes");
        }
      }
    }
    for (Prefetch op : l3.prefetches.pending) {
      if (op.state == Prefetch.State.DRAINING) {
        if (op.lockNode != null) {
          InvariantRun.fail(op + " drains but still holds a lock on " + op.lockNode);
        }
      } else if (op.state == Prefetch.State.DONE
          || op.lockNode == null
          || l3.prefetches.byRequest.get(op.requestId) != op) {
        InvariantRun.fail(
            op + " is pending but DONE, holds no anchor lock, or is not its request's");
      } else {
        lock(op.lockNode);
      }
    }
    LongMap<Prefetch> live = l3.prefetches.byRequest;
    for (int s = 0; s < live.slotCount(); s++) {
      Prefetch op = live.valueAt(s);
      if (op == null) {
        continue;
      }
      if (op.requestId != live.keyAt(s) || op.state == Prefetch.State.DRAINING) {
        InvariantRun.fail(
            op + " is filed under request " + live.keyAt(s) + " in state " + op.state);
      }
      if (op.state == Prefetch.State.DONE) {
        if (cache.rooms().requests().get(op.requestId) != null) {
          InvariantRun.fail(op + " is DONE but its request is active: the outcome should be taken");
        }
        if (op.lockNode != null) {
          lock(op.lockNode);
        }
      } else if (!l3.prefetches.pending.contains(op)) {
        InvariantRun.fail(op + " is live but not pending");
      }
    }
  }

  private void acks(Backups backups) {
    for (WriteAck ack : backups.writes) {
      for (int i = 0; i < ack.nodes.size(); i++) {
        RadixNode n = ack.nodes.get(i);
        if (ackOf.put(n, ack) != null) {
          InvariantRun.fail("node " + n + " is in two pending write acks");
        }
        for (int j = 0; j < i; j++) {
          for (RadixNode a = ack.nodes.get(j).parent; a != null; a = a.parent) {
            if (a == n) {
              InvariantRun.fail(
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
}
