package io.kvtier.model.llama;

/**
 * Gives every rank of a context-parallel group every rank's partial attention outputs, unchanged
 * and in rank order, so that each merges them the same way and holds the same bits.
 */
@FunctionalInterface
interface PartialGather {
  /**
   * Every rank's {@code values[0, length)}.
   *
   * @param values this rank's partials
   * @param length how many are valid (the same on every rank)
   * @return {@code ranks * length} floats, rank {@code r}'s from {@code r * length}; valid until
   *     the next call
   */
  float[] gather(float[] values, int length);
}
