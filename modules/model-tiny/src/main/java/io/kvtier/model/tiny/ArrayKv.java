package io.kvtier.model.tiny;

import java.util.Objects;

/**
 * A sequence's KV in plain heap arrays, for the reference run without any cache. Grows as
 * positions are written; a new sequence may reuse it, since every position is written before it
 * is read.
 */
public final class ArrayKv implements KvSequence {
  private final int vector;
  private float[][] keys;
  private float[][] values;

  /**
   * Creates an empty store for a model.
   *
   * @param config the model's shape
   */
  public ArrayKv(ModelConfig config) {
    this(config, 1);
  }

  /**
   * Creates an empty store for one rank's shard of the heads.
   *
   * @param config the model's shape
   * @param ranks the ranks the heads are split over
   */
  public ArrayKv(ModelConfig config, int ranks) {
    Objects.requireNonNull(config, "config");
    config.checkShards(ranks);
    this.vector = config.modelDim() / ranks;
    int initial = vector * 64;
    keys = new float[config.layers()][initial];
    values = new float[config.layers()][initial];
  }

  @Override
  public void write(int layer, int position, float[] k, int keyOffset, float[] v, int valueOffset) {
    int at = position * vector;
    if (at + vector > keys[layer].length) {
      int size = Math.max(at + vector, keys[layer].length * 2);
      for (int l = 0; l < keys.length; l++) {
        keys[l] = java.util.Arrays.copyOf(keys[l], size);
        values[l] = java.util.Arrays.copyOf(values[l], size);
      }
    }
    System.arraycopy(k, keyOffset, keys[layer], at, vector);
    System.arraycopy(v, valueOffset, values[layer], at, vector);
  }

  @Override
  public void read(int layer, int length, float[] k, float[] v) {
    System.arraycopy(keys[layer], 0, k, 0, length * vector);
    System.arraycopy(values[layer], 0, v, 0, length * vector);
  }
}
