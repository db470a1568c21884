package io.kvtier.core.cache;

/**
 * A lock taken with {@link RankCache#lock(RadixNode)} on a node and its ancestors, keeping them
 * from eviction until {@link RankCache#unlock(CacheLock)}. Releasing a lock twice is an error.
 */
public final class CacheLock {
  final RankCache owner;
  final long serial;
  final RadixNode node;
  boolean released;

  CacheLock(RankCache owner, long serial, RadixNode node) {
    this.owner = owner;
    this.serial = serial;
    this.node = node;
  }

  /**
   * The locked node.
   *
   * @return the node
   */
  public RadixNode node() {
    return node;
  }

  /**
   * Whether the lock has been released.
   *
   * @return true after {@link RankCache#unlock(CacheLock)}
   */
  public boolean isReleased() {
    return released;
  }

  @Override
  public String toString() {
    return "CacheLock[#" + serial + " on node " + node.id + (released ? ", released" : "") + "]";
  }
}
