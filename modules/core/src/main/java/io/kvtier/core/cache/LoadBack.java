package io.kvtier.core.cache;

import java.util.ArrayList;

/**
 * A load-back (host to device) of an evicted chain of nodes, submitted layer by layer so that the
 * model's layer {@code i} can run once layer {@code i} is loaded (CACHE.md §10).
 *
 * <p>Replicated state only: the chain, its position in the load FIFO, its size, and whether its
 * ack was committed (and as failed). The layer copies themselves are rank-local and not
 * reachable from here (nor from the tree nodes that name this load): ask the cache with {@link
 * RankCache#isLoadLayerReady} and {@link RankCache#awaitLoadLayer} before the model reads layer
 * {@code i} on this rank.
 *
 * <p>The chain is resident and locked from registration until the load's ack is committed by
 * {@link CommitPort#commitLoads(int, java.util.BitSet)}, with the count and failures agreed
 * across the ranks (the engine's sync step). Requests that match the chain before then see this load in
 * {@link Admission#pendingLoads()} and must wait for each layer before reading it.
 */
public final class LoadBack {
  final long sequence;
  final ArrayList<RadixNode> nodes;
  final RadixNode lockNode;
  final int layers;
  final int pages;
  boolean committed;
  boolean failed;

  LoadBack(long sequence, ArrayList<RadixNode> nodes, RadixNode lockNode, int layers, int pages) {
    this.sequence = sequence;
    this.nodes = nodes;
    this.lockNode = lockNode;
    this.layers = layers;
    this.pages = pages;
  }

  /**
   * The load's position in the load FIFO, from 0.
   *
   * @return the sequence number
   */
  public long sequence() {
    return sequence;
  }

  /**
   * The number of pages loaded.
   *
   * @return pages
   */
  public int pages() {
    return pages;
  }

  /**
   * The number of layers, one transfer each.
   *
   * @return layers
   */
  public int layers() {
    return layers;
  }

  /**
   * Whether the load's ack has been committed (the chain is unlocked and no longer pending).
   *
   * @return true after the commit
   */
  public boolean isCommitted() {
    return committed;
  }

  /**
   * Whether the load was committed as failed; its pages are then never matched again.
   *
   * @return true if committed as failed
   */
  public boolean failed() {
    return failed;
  }

  @Override
  public String toString() {
    return "LoadBack[seq="
        + sequence
        + ", pages="
        + pages
        + ", layers="
        + layers
        + (committed ? (failed ? ", failed" : ", committed") : ", pending")
        + "]";
  }
}
