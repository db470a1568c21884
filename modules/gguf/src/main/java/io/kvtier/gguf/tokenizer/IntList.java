package io.kvtier.gguf.tokenizer;

import java.util.Arrays;

/** A growable int array for the ids of one encode call. */
final class IntList {
  private int[] values = new int[16];
  private int size;

  void add(int v) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = v;
  }

  int[] toArray() {
    return Arrays.copyOf(values, size);
  }
}
