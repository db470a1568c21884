package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ArrayKvStoreTest {
  @Test
  void readsBackTheRowsWrittenPerLayerInPositionOrder() {
    ArrayKvStore kv = new ArrayKvStore(2, 3, 4);
    float[] k = {1, 2, 3, 4, 5, 6};
    float[] v = {-1, -2, -3, -4, -5, -6};
    kv.write(1, 0, k, v, 0);
    kv.write(1, 1, k, v, 3);
    float[] keys = new float[6];
    float[] values = new float[6];
    kv.read(1, 2, keys, values);
    assertThat(keys).containsExactly(k);
    assertThat(values).containsExactly(v);
    kv.read(0, 2, keys, values);
    assertThat(keys).containsOnly(0f);
  }

  @Test
  void aPositionBeyondTheCapacityNamesIndexLengthAndCapacity() {
    ArrayKvStore kv = new ArrayKvStore(1, 2, 4);
    assertThatThrownBy(() -> kv.write(0, 4, new float[2], new float[2], 0))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessage("index=4 length=1 capacity=4");
    assertThatThrownBy(() -> kv.read(0, 5, new float[10], new float[10]))
        .hasMessage("index=0 length=5 capacity=4");
  }
}
