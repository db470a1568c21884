package io.kvtier.model.llama;

/**
 * Where a {@link LlamaModel} keeps the keys and values of the positions it has seen, per layer.
 * The model writes only the positions it computes and reads positions {@code 0..p} back before
 * attending from position {@code p}, so the store may hold those rows anywhere (an array, or
 * kvtier's pages) as long as it returns the bits written.
 *
 * <p>A row is {@code kvDim = kvHeads * headSize} floats, heads in order.
 */
public interface KvStore {

  /** Layers this store holds. */
  int layers();

  /** Floats per key (and per value) row. */
  int kvDim();

  /** Positions this store can hold. */
  int capacity();

  /**
   * Stores the key and value rows of {@code position} in {@code layer}, read from
   * {@code keys[offset..offset+kvDim)} and {@code values[offset..offset+kvDim)}.
   */
  void write(int layer, int position, float[] keys, float[] values, int offset);

  /**
   * Copies the key and value rows of positions {@code 0..count-1} of {@code layer} into
   * {@code keys} and {@code values} ({@code count * kvDim} floats each, position-major).
   */
  default void read(int layer, int count, float[] keys, float[] values) {
    read(layer, 0, count, keys, values);
  }

  /**
   * Copies the key and value rows of positions {@code from..count-1} of {@code layer} into
   * {@code keys} and {@code values} at their own rows ({@code from * kvDim} on), leaving the rows
   * before {@code from} as they are: what a layer that attends over a sliding window needs.
   */
  void read(int layer, int from, int count, float[] keys, float[] values);
}
