package io.kvtier.model.tiny;

import io.kvtier.core.config.LayerMix;
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

  /** Told a recurrent layer's state after each capture position (HYBRID.md §5 snapshots). */
  @FunctionalInterface
  interface Capture {
    /**
     * Layer {@code layer} has taken in positions {@code [0, position)}.
     *
     * @param layer the recurrent layer
     * @param position a capture position
     * @param state the layer's state there; read it now, it changes with the next position
     */
    void at(int layer, int position, long[] state);
  }

  private int[] capturePositions = new int[0];
  private Capture capture;

  /**
   * Asks for the state of every recurrent layer at each of {@code positions} (ascending) during
   * the next steps, until changed; no positions for none.
   */
  void captureAt(int[] positions, Capture to) {
    capturePositions = positions;
    capture = positions.length == 0 ? null : to;
  }

  /** Called by the recurrent layer after it took in position {@code position - 1}. */
  void afterPosition(int layer, int position, long[] s) {
    if (capture != null) {
      for (int p : capturePositions) {
        if (p == position) {
          capture.at(layer, position, s);
        }
      }
    }
  }

  /**
   * Sets a recurrent layer's state to one taken at {@code position} (a snapshot loaded back).
   *
   * @param layer the recurrent layer
   * @param values the state, one value per channel
   * @param position the positions {@code [0, position)} it has taken in
   */
  void load(int layer, long[] values, int position) {
    long[] s = state[layer];
    if (s == null || values.length != s.length) {
      throw new IllegalArgumentException(
          "layer " + layer + " is no recurrent layer of " + values.length + " channels");
    }
    System.arraycopy(values, 0, s, 0, s.length);
    positions[layer] = position;
  }

  /**
   * The channels of each recurrent layer's state on this rank.
   *
   * @return the channels, 0 without recurrent layers
   */
  int channels() {
    for (long[] s : state) {
      if (s != null) {
        return s.length;
      }
    }
    return 0;
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
              + "; resume from a snapshot at "
              + from
              + " or recompute from position 0");
    }
    positions[layer] = to;
    return s;
  }
}
