package io.kvtier.cli.model;

import java.util.Arrays;

/**
 * The recurrent layers' state of one sequence, on one rank: for each recurrent layer the
 * fixed-point state of the rank's channels ({@code long}, {@value ForwardPass#FIXED_POINT_BITS}
 * fractional bits) and the position it has reached, that is how many of the sequence's tokens it
 * has taken in. Integer state makes a resumed run the same bits as one that never stopped, on any
 * number of ranks. A model without recurrent layers has an empty state that is at every position.
 *
 * <p>Not thread-safe; one per sequence.
 */
final class RecurrentState {
  private final long[][] state;
  private final int[] positions;

  /**
   * The state at position 0 (nothing taken in) of a model's shard.
   *
   * @param mix the model's layers
   * @param channels the channels of one layer on this rank ({@code heads / ranks * headDim})
   */
  RecurrentState(LayerMix mix, int channels) {
    state = new long[mix.size()][];
    positions = new int[mix.size()];
    for (int l = 0; l < mix.size(); l++) {
      if (!mix.layer(l).hasKv()) {
        state[l] = new long[channels];
      }
    }
  }

  /** Back to position 0, as for a new sequence. */
  void reset() {
    for (int l = 0; l < state.length; l++) {
      if (state[l] != null) {
        Arrays.fill(state[l], 0L);
      }
      positions[l] = 0;
    }
  }

  /**
   * Whether every recurrent layer has taken in exactly positions {@code [0, position)}, so that a
   * run may continue at {@code position}.
   *
   * @param position the next position to compute
   * @return true if the state may be used to compute it
   */
  boolean isAt(int position) {
    for (int l = 0; l < state.length; l++) {
      if (state[l] != null && positions[l] != position) {
        return false;
      }
    }
    return true;
  }

  /**
   * The state of a recurrent layer about to take in positions {@code [from, to)}; afterwards the
   * layer is at {@code to}.
   *
   * @throws IllegalStateException if the layer is not at {@code from}: its state would not be the
   *     one after the tokens before {@code from}, and the output would silently differ
   */
  long[] advance(int layer, int from, int to) {
    long[] s = state[layer];
    if (s == null) {
      throw new IllegalArgumentException("layer " + layer + " is not a recurrent layer");
    }
    if (positions[layer] != from) {
      throw new IllegalStateException(
          "recurrent layer "
              + layer
              + " has taken in "
              + positions[layer]
              + " positions but the step computes positions ["
              + from
              + ", "
              + to
              + "): the state would not be the one after the tokens before "
              + from
              + "; recompute from position 0 (the cache holds no recurrent state)");
    }
    positions[layer] = to;
    return s;
  }
}
