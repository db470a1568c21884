package io.kvtier.core.cache;

/** The mutable counters behind {@link L3Stats}, shared by the L3 writes and prefetches. */
final class L3Counters {
  private final long[] values = new long[L3Counter.all().length];

  void increment(L3Counter counter) {
    values[counter.ordinal()]++;
  }

  void add(L3Counter counter, long n) {
    values[counter.ordinal()] += n;
  }

  L3Stats snapshot() {
    return L3Stats.of(c -> values[c.ordinal()]);
  }
}
