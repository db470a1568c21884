package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * An open-addressing map from {@code long} keys to values, with linear probing and backward-shift
 * deletion, that never boxes a key.
 *
 * <p>Design note: the radix tree looks up one child per node on the path of every request, so
 * this lookup sits on the hot path. A {@code HashMap<Long, V>} would box the key on every call.
 * Keys are spread with a Fibonacci multiply and the table index is the high bits of the product.
 * Iteration order ({@link #slotCount()}, {@link #valueAt(int)}) depends only on the keys and the
 * history of puts and removes, so it is the same on every rank that ran the same operations.
 *
 * @param <V> the value type
 */
final class LongMap<V> {
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;

  private long[] keys;
  private Object[] values;
  private int size;
  private int shift;

  /**
   * An empty map sized for a few entries.
   *
   * @param expected entries expected; the table grows past it
   */
  LongMap(int expected) {
    int capacity = Integer.highestOneBit(Math.max(2, expected) * 2 - 1) << 1;
    allocate(Math.max(2, capacity));
  }

  private void allocate(int capacity) {
    keys = new long[capacity];
    values = new Object[capacity];
    shift = 64 - Integer.numberOfTrailingZeros(capacity);
  }

  private int index(long key) {
    return (int) ((key * GOLDEN) >>> shift);
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  @SuppressWarnings("unchecked")
  V get(long key) {
    int mask = keys.length - 1;
    for (int i = index(key); ; i = (i + 1) & mask) {
      Object v = values[i];
      if (v == null) {
        return null;
      }
      if (keys[i] == key) {
        return (V) v;
      }
    }
  }

  /**
   * Maps a key to a value.
   *
   * @param key the key
   * @param value the value, not null
   * @return the previous value, or null
   */
  @SuppressWarnings("unchecked")
  V put(long key, V value) {
    int mask = keys.length - 1;
    int i = index(key);
    for (; values[i] != null; i = (i + 1) & mask) {
      if (keys[i] == key) {
        V old = (V) values[i];
        values[i] = value;
        return old;
      }
    }
    keys[i] = key;
    values[i] = value;
    if (++size * 4 > keys.length * 3) {
      grow();
    }
    return null;
  }

  /**
   * Removes a key.
   *
   * @param key the key
   * @return the removed value, or null if absent
   */
  @SuppressWarnings("unchecked")
  V remove(long key) {
    int mask = keys.length - 1;
    int i = index(key);
    while (true) {
      if (values[i] == null) {
        return null;
      }
      if (keys[i] == key) {
        break;
      }
      i = (i + 1) & mask;
    }
    V old = (V) values[i];
    // Backward shift: move later entries of the probe run into the hole so that lookups never
    // need tombstones.
    int hole = i;
    for (int j = (hole + 1) & mask; values[j] != null; j = (j + 1) & mask) {
      int home = index(keys[j]);
      boolean stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!stays) {
        keys[hole] = keys[j];
        values[hole] = values[j];
        hole = j;
      }
    }
    values[hole] = null;
    size--;
    return old;
  }

  private void grow() {
    long[] oldKeys = keys;
    Object[] oldValues = values;
    allocate(keys.length * 2);
    int mask = keys.length - 1;
    for (int s = 0; s < oldKeys.length; s++) {
      if (oldValues[s] != null) {
        int i = index(oldKeys[s]);
        while (values[i] != null) {
          i = (i + 1) & mask;
        }
        keys[i] = oldKeys[s];
        values[i] = oldValues[s];
      }
    }
  }

  /** Number of table slots, for iteration with {@link #valueAt(int)}. */
  int slotCount() {
    return values.length;
  }

  /** The value in a table slot, or null if the slot is empty. */
  @SuppressWarnings("unchecked")
  V valueAt(int slot) {
    return (V) values[slot];
  }

  /** The key in a table slot; meaningful only when {@link #valueAt(int)} is not null. */
  long keyAt(int slot) {
    return keys[slot];
  }

  void clear() {
    Arrays.fill(values, null);
    size = 0;
  }
}
