package io.kvtier.cli.model;

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
}
