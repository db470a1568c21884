package io.kvtier.model.tiny;

/**
 * Where one sequence's attention KV lives while the model runs: kvtier's device pages for a
 * cached run ({@link PagedKv}), a plain array for the reference run ({@link ArrayKv}). Both hold
 * fp32 bit for bit, so the model computes the same numbers whichever it is given.
 *
 * <p>Vectors are {@code heads * headDim} floats, heads in order, per (layer, position); on one
 * rank of a tensor-parallel group, the rank's shard of the heads only.
 */
public interface KvSequence {

  /**
   * Stores the K and V vectors of one token in one layer.
   *
   * @param layer the layer
   * @param position the token's absolute position in the sequence
   * @param keys the array holding the K vector
   * @param keyOffset index of the K vector's first element
   * @param values the array holding the V vector
   * @param valueOffset index of the V vector's first element
   */
  void write(int layer, int position, float[] keys, int keyOffset, float[] values, int valueOffset);

  /**
   * Gathers the K and V vectors of positions {@code [0, length)} of one layer, position {@code
   * p}'s vectors at index {@code p * heads * headDim}.
   *
   * @param layer the layer
   * @param length positions to read; every one was written before
   * @param keys where the K vectors go
   * @param values where the V vectors go
   */
  void read(int layer, int length, float[] keys, float[] values);

  /**
   * Whether this sequence keeps no KV of a layer for the positions a run only reads (those before
   * its {@code writeFrom}): the run then computes and writes that layer's KV of every position it
   * runs. So it is for an SWA layer whose KV the cache keeps as windows (docs/HYBRID.md §4): a
   * request holds its own window, never the shared pages'.
   *
   * @param layer the layer
   * @return false by default: every position written before is there
   */
  default boolean recomputes(int layer) {
    return false;
  }
}
