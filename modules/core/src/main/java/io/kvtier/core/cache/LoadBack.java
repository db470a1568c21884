package io.kvtier.core.cache;

import io.kvtier.spi.TransferHandle;
import java.util.ArrayList;
import java.util.Objects;

/**
 * A load-back (host to device) of an evicted chain of nodes, submitted layer by layer so that the
 * model's layer {@code i} can run once layer {@code i} is loaded (HICACHE-SPEC §10).
 *
 * <p>The chain is resident and locked from registration until the load's ack is committed by
 * {@link RankCache#commitLoads(int)}. Requests that match the chain before then see this load in
 * {@link Admission#pendingLoads()} and must wait for each layer before reading it. Queries of copy
 * progress ({@link #isLayerReady}, {@link #awaitLayer}) are rank-local and decide nothing in the
 * cache; {@link #isCommitted()} and {@link #failed()} are replicated.
 */
public final class LoadBack {
  final long sequence;
  final ArrayList<RadixNode> nodes;
  final RadixNode lockNode;
  final TransferHandle[] layers;
  final int pages;
  boolean committed;
  boolean failed;

  LoadBack(long sequence, ArrayList<RadixNode> nodes, RadixNode lockNode,
      TransferHandle[] layers, int pages) {
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
    return layers.length;
  }

  /**
   * Whether layer {@code layer} has finished copying on this rank, without blocking. Rank-local.
   *
   * @param layer the layer
   * @return true once the copy of that layer is done (or failed)
   */
  public boolean isLayerReady(int layer) {
    return layers[Objects.checkIndex(layer, layers.length)].isDone();
  }

  /**
   * Blocks until layer {@code layer} is loaded on this rank.
   *
   * @param layer the layer
   * @throws io.kvtier.spi.TransferFailedException if the copy failed: the request must be aborted
   * @throws InterruptedException if interrupted
   */
  public void awaitLayer(int layer) throws InterruptedException {
    layers[Objects.checkIndex(layer, layers.length)].await();
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

  boolean copiesDone() {
    for (TransferHandle h : layers) {
      if (!h.isDone()) {
        return false;
      }
    }
    return true;
  }

  boolean copyFailed() {
    for (TransferHandle h : layers) {
      if (h.failure().isPresent()) {
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return "LoadBack[seq=" + sequence + ", pages=" + pages + ", layers=" + layers.length
        + (committed ? (failed ? ", failed" : ", committed") : ", pending") + "]";
  }
}
