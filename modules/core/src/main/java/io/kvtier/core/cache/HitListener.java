package io.kvtier.core.cache;

/**
 * What the tree tells about a hit on a resident node, after counting it: the write triggers
 * (write-through registration, L3 write) listen here, so that the tree never calls up into the
 * rooms that copy pages. The tree takes it as an argument of each operation that counts hits
 * ({@link CacheTree#insert}, {@link CacheTree#hitPath}), because the listener's rooms are built
 * on the tree.
 */
interface HitListener {
  /**
   * A hit on {@code node} was counted (its hit count and priority are updated). May register a
   * backup or an L3 write of the node, which may evict host-only leaves; never changes the node's
   * place in the tree.
   */
  void hit(RadixNode node);
}
