package io.kvtier.model.llama;

/**
 * Sums a layer's partial outputs (the output projection's, the feed-forward down projection's)
 * over the ranks of a tensor-parallel group, in place and in rank order, so that afterwards
 * every rank holds the same bits.
 */
@FunctionalInterface
interface PartialSums {
  /** The sums of a pass that owns every head and row: its partials are the sums already. */
  PartialSums WHOLE = (values, length) -> {};

  /**
   * Replaces {@code values[0, length)} by their sums over the ranks.
   *
   * @param values this rank's partials
   * @param length how many are valid
   */
  void sum(float[] values, int length);
}
