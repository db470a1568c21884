package io.kvtier.core.rank;

/**
 * A 64-bit running hash for replica digests and collective schedules: each value is folded in
 * with a SplitMix64 finalizer, so that order matters and nearby inputs spread over the whole
 * range. Not cryptographic: it detects accidental divergence, not an adversary.
 */
final class Digest {
  private long state;

  Digest(long seed) {
    this.state = seed;
  }

  Digest add(long value) {
    state = mix(state ^ mix(value + 0x9E3779B97F4A7C15L));
    return this;
  }

  Digest add(boolean value) {
    return add(value ? 1 : 0);
  }

  Digest add(String value) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < value.length(); i++) {
      h ^= value.charAt(i);
      h *= 0x100000001b3L;
    }
    return add(h).add(value.length());
  }

  long value() {
    return state;
  }

  static long mix(long x) {
    long z = x;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
