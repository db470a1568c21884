package io.kvtier.simulator.workload;

/** Parameter checks shared by the generators, with messages that name the spec key. */
final class Check {

  /** The longest prompt a generator makes: one Java array, with room for a header. */
  static final long MAX_PROMPT = Integer.MAX_VALUE - 8;

  private Check() {}

  static void atLeast(String key, long value, long min) {
    if (value < min) {
      throw new IllegalArgumentException(key + "=" + value + " must be >= " + min);
    }
  }

  static void finiteAtLeast(String key, double value, double min) {
    if (!(value >= min) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(key + "=" + value + " must be a finite number >= " + min);
    }
  }
}
