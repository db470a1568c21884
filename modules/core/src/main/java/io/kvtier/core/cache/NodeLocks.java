package io.kvtier.core.cache;

/**
 * The explicit node locks of one rank ({@link RankCache#lock(RadixNode)}), apart from the locks
 * requests hold: each has a serial from a per-cache counter, so that the replica digest can
 * cover them in a replicated order.
 */
final class NodeLocks {
  private final CacheTree tree;
  private final LongMap<CacheLock> locks = new LongMap<>(4);
  private long serial;

  NodeLocks(CacheTree tree) {
    this.tree = tree;
  }

  LongMap<CacheLock> all() {
    return locks;
  }

  CacheLock lock(RankCache owner, RadixNode node) {
    if (node.invalid != 0) {
      throw new IllegalStateException(
          "lock of node id=" + node.id + ": its pages belong to a failed load-back; match again");
    }
    tree.lock(node);
    CacheLock lock = new CacheLock(owner, ++serial, node);
    locks.put(lock.serial, lock);
    return lock;
  }

  void unlock(RankCache owner, CacheLock lock) {
    if (lock.owner != owner) {
      throw new IllegalArgumentException(lock + " belongs to another cache");
    }
    if (lock.released) {
      throw new IllegalStateException(
          lock + " was already released: release each lock exactly once");
    }
    lock.released = true;
    locks.remove(lock.serial);
    tree.unlock(lock.node);
  }
}
