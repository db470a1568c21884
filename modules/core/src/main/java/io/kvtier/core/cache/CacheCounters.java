package io.kvtier.core.cache;

/**
 * The mutable counters behind {@link CacheStats}, bumped only at replicated points (registration,
 * the agreed commits, replicated evictions). One per cache, shared by its parts.
 */
final class CacheCounters {
  private final long[] values = new long[CacheCounter.all().length];

  void increment(CacheCounter counter) {
    values[counter.ordinal()]++;
  }

  void add(CacheCounter counter, long n) {
    values[counter.ordinal()] += n;
  }

  long get(CacheCounter counter) {
    return values[counter.ordinal()];
  }

  CacheStats snapshot() {
    return CacheStats.copyOf(values);
  }
}
