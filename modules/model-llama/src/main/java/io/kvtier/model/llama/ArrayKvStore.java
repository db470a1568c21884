package io.kvtier.model.llama;

/** A {@link KvStore} in two heap arrays per layer, for tests and single-sequence use. */
public final class ArrayKvStore implements KvStore {
  private final int layers;
  private final int kvDim;
  private final int capacity;
  private final float[][] keys;
  private final float[][] values;

  /** A store of {@code capacity} positions of {@code kvDim} floats in {@code layers} layers. */
  public ArrayKvStore(int layers, int kvDim, int capacity) {
    if (layers <= 0 || kvDim <= 0 || capacity <= 0) {
      throw new IllegalArgumentException(
          "layers=" + layers + " kvDim=" + kvDim + " capacity=" + capacity + " must be positive");
    }
    this.layers = layers;
    this.kvDim = kvDim;
    this.capacity = capacity;
    this.keys = new float[layers][Math.multiplyExact(kvDim, capacity)];
    this.values = new float[layers][Math.multiplyExact(kvDim, capacity)];
  }

  /** A store shaped for {@code model}'s layers and KV heads, holding its whole context. */
  public static ArrayKvStore forModel(LlamaModel model) {
    return new ArrayKvStore(
        model.hyperparameters().blockCount(), model.kvDim(), model.contextLength());
  }

  @Override
  public int layers() {
    return layers;
  }

  @Override
  public int kvDim() {
    return kvDim;
  }

  @Override
  public int capacity() {
    return capacity;
  }

  @Override
  public void write(int layer, int position, float[] k, float[] v, int offset) {
    checkPosition(position, 1);
    System.arraycopy(k, offset, keys[layer], position * kvDim, kvDim);
    System.arraycopy(v, offset, values[layer], position * kvDim, kvDim);
  }

  @Override
  public void read(int layer, int from, int count, float[] k, float[] v) {
    checkPosition(from, count - from);
    System.arraycopy(keys[layer], from * kvDim, k, from * kvDim, (count - from) * kvDim);
    System.arraycopy(values[layer], from * kvDim, v, from * kvDim, (count - from) * kvDim);
  }

  private void checkPosition(int position, int count) {
    if (position < 0 || count < 0 || position + count > capacity) {
      throw new IndexOutOfBoundsException(
          "index=" + position + " length=" + count + " capacity=" + capacity);
    }
  }
}
