package io.kvtier.core.cache;

import java.util.Arrays;
import java.util.Locale;

/**
 * What {@link CacheStats} and {@link L3Stats} share: one long per constant of a counter enum, in
 * the enum's order, so that a counter is one enum constant and every reader (the replica digest,
 * JSON, metrics, summaries) iterates the enum or asks by name instead of listing fields.
 */
final class Counts {
  private Counts() {}

  /**
   * The name of a counter in JSON and tables: its constant in lower camel case ({@code
   * BACKUPS_COMMITTED} is {@code backupsCommitted}).
   */
  static String key(Enum<?> counter) {
    String[] words = counter.name().toLowerCase(Locale.ROOT).split("_");
    StringBuilder key = new StringBuilder(words[0]);
    for (int i = 1; i < words.length; i++) {
      key.append(Character.toUpperCase(words[i].charAt(0))).append(words[i], 1, words[i].length());
    }
    return key.toString();
  }

  /** A copy of {@code values}, one per counter, none negative. */
  static long[] checked(Enum<?>[] counters, long[] values) {
    if (values.length != counters.length) {
      throw new IllegalArgumentException(
          values.length + " values for " + counters.length + " counters");
    }
    for (long v : values) {
      if (v < 0) {
        throw new IllegalArgumentException(
            "negative counter in " + Arrays.toString(values) + ": counters only grow");
      }
    }
    return values.clone();
  }

  /** {@code Name[key=value, ...]}, as a record prints. */
  static String toString(String name, Enum<?>[] counters, long[] values) {
    StringBuilder s = new StringBuilder(name).append('[');
    for (int i = 0; i < counters.length; i++) {
      s.append(i == 0 ? "" : ", ").append(key(counters[i])).append('=').append(values[i]);
    }
    return s.append(']').toString();
  }
}
