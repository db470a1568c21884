package io.kvtier.model.tiny;

/**
 * Blocks the model before it reads a layer's cached KV until that layer is on the device: the
 * layer-wise load-back of CACHE.md §10, where layer {@code i} may run while later layers
 * still copy.
 */
@FunctionalInterface
public interface LayerGate {

  /** A gate that never waits: every layer is already on the device. */
  LayerGate OPEN = layer -> {};

  /**
   * Waits until {@code layer}'s cached KV may be read.
   *
   * @param layer the layer about to run
   * @throws InterruptedException if interrupted while waiting
   */
  void awaitLayer(int layer) throws InterruptedException;
}
