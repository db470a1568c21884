package io.kvtier.model.tiny;

import io.kvtier.core.config.LayerMix;
import java.util.Arrays;
import java.util.Objects;

/**
 * One request's KV as the model reads it when the cache keeps SWA layers' KV as windows
 * (docs/HYBRID.md §4): the full-attention layers' KV in the device pages ({@link #over}), each
 * SWA layer's in arrays of this request's own. The pages hold no SWA block, so the request keeps
 * the SWA KV it computes (and the window it resumed from) here, and a snapshot carries the last
 * {@code W - 1} positions of it. Every SWA position the request runs is computed again and
 * written here ({@link #recomputes}), never read from anything shared.
 *
 * <p>Not thread-safe; one per request.
 */
final class SwaWindows implements KvSequence {
  private final LayerMix mix;
  private final int width;
  private final float[][] keys;
  private final float[][] values;

  /** Positions {@code [windowFrom, windowTo)} of every SWA layer are here; empty at first. */
  private int windowFrom;

  private int windowTo;
  private KvSequence pages;

  /**
   * An empty window store.
   *
   * @param mix the model's layers
   * @param width floats of one K (or V) vector of the rank's shard
   */
  SwaWindows(LayerMix mix, int width) {
    this.mix = Objects.requireNonNull(mix, "mix");
    this.width = width;
    this.keys = new float[mix.size()][];
    this.values = new float[mix.size()][];
    for (int l = 0; l < mix.size(); l++) {
      if (mix.layer(l).kind() == LayerMix.Kind.SWA) {
        keys[l] = new float[0];
        values[l] = new float[0];
      }
    }
  }

  /**
   * This store over the full-attention layers' KV of one step.
   *
   * @param fullLayers the request's pages (bound to its page table)
   * @return this
   */
  SwaWindows over(KvSequence fullLayers) {
    this.pages = Objects.requireNonNull(fullLayers, "fullLayers");
    return this;
  }

  private boolean swa(int layer) {
    return keys[layer] != null;
  }

  @Override
  public boolean recomputes(int layer) {
    return swa(layer);
  }

  @Override
  public void write(int layer, int position, float[] k, int keyOffset, float[] v, int valueOffset) {
    if (!swa(layer)) {
      pages.write(layer, position, k, keyOffset, v, valueOffset);
      return;
    }
    grow(layer, position + 1);
    System.arraycopy(k, keyOffset, keys[layer], position * width, width);
    System.arraycopy(v, valueOffset, values[layer], position * width, width);
  }

  @Override
  public void read(int layer, int length, float[] k, float[] v) {
    if (!swa(layer)) {
      pages.read(layer, length, k, v);
      return;
    }
    grow(layer, length);
    System.arraycopy(keys[layer], 0, k, 0, length * width);
    System.arraycopy(values[layer], 0, v, 0, length * width);
  }

  private void grow(int layer, int positions) {
    int size = positions * width;
    if (keys[layer].length < size) {
      int grown = Math.max(size, keys[layer].length * 2);
      keys[layer] = Arrays.copyOf(keys[layer], grown);
      values[layer] = Arrays.copyOf(values[layer], grown);
    }
  }

  /**
   * The window a snapshot at {@code position} holds of SWA layer {@code layer}: positions {@code
   * [max(0, position - W + 1), position)}.
   *
   * @return the first position
   */
  int windowStart(int layer, int position) {
    return Math.max(0, position - mix.layer(layer).window() + 1);
  }

  /**
   * Whether every SWA layer's window of a step starting at {@code position} is here: the request
   * computed up to there, or resumed there.
   *
   * @param position the first position of the step
   * @return true if the step may start there
   */
  boolean isAt(int position) {
    return windowTo == position && windowFrom <= minWindowStart(position);
  }

  private int minWindowStart(int position) {
    int first = position;
    for (int l = 0; l < mix.size(); l++) {
      if (swa(l)) {
        first = Math.min(first, windowStart(l, position));
      }
    }
    return first;
  }

  /** Every SWA layer's KV of {@code [windowFrom, to)} is here now (a step or a rebuild ran). */
  void ranTo(int to) {
    windowTo = to;
  }

  /** Drops what is here: the next run starts at 0 (a rebuild) or loads a window. */
  void reset() {
    windowFrom = 0;
    windowTo = 0;
  }

  /** A window was loaded: the KV of {@code [min window start, position)} is here. */
  void loadedAt(int position) {
    windowFrom = minWindowStart(position);
    windowTo = position;
  }

  /** The K vectors of layer {@code layer}, position {@code p} at {@code p * width}. */
  float[] keys(int layer, int positions) {
    grow(layer, positions);
    return keys[layer];
  }

  /** The V vectors of layer {@code layer}, position {@code p} at {@code p * width}. */
  float[] values(int layer, int positions) {
    grow(layer, positions);
    return values[layer];
  }
}
