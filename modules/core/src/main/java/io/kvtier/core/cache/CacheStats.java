package io.kvtier.core.cache;

import java.util.Arrays;
import java.util.Objects;
import java.util.function.ToLongFunction;

/**
 * Replicated counters of one cache, one per {@link CacheCounter}: every one changes only at
 * points that every rank reaches in the same order, so two ranks that took the same decisions
 * report equal stats. Nothing here counts rank-local progress. Read a counter by name with
 * {@link #get}; the named accessors are shorthands for the readers that had them.
 */
public final class CacheStats {
  /** No activity. */
  public static final CacheStats NONE = of(c -> 0);

  private final long[] values;

  private CacheStats(long[] values) {
    this.values = Counts.checked(CacheCounter.all(), values);
  }

  /**
   * Stats with the given value of each counter.
   *
   * @param values each counter's value
   * @return the stats
   * @throws IllegalArgumentException if a value is negative (counters only grow)
   */
  public static CacheStats of(ToLongFunction<CacheCounter> values) {
    Objects.requireNonNull(values, "values");
    CacheCounter[] all = CacheCounter.all();
    long[] v = new long[all.length];
    for (CacheCounter c : all) {
      v[c.ordinal()] = values.applyAsLong(c);
    }
    return new CacheStats(v);
  }

  /** From the cache's own counters, in enum order. */
  static CacheStats copyOf(long[] values) {
    return new CacheStats(values);
  }

  /**
   * One counter.
   *
   * @param counter which
   * @return its value, at least 0
   */
  public long get(CacheCounter counter) {
    return values[counter.ordinal()];
  }

  /** @return {@link CacheCounter#PREPARED_BACKUPS} */
  public long preparedBackups() {
    return get(CacheCounter.PREPARED_BACKUPS);
  }

  /** @return {@link CacheCounter#STREAMED_LAYERS} */
  public long streamedLayers() {
    return get(CacheCounter.STREAMED_LAYERS);
  }

  /** @return {@link CacheCounter#PREPARED_ATTACHED} */
  public long preparedAttached() {
    return get(CacheCounter.PREPARED_ATTACHED);
  }

  /** @return {@link CacheCounter#PREPARED_ROLLED_BACK} */
  public long preparedRolledBack() {
    return get(CacheCounter.PREPARED_ROLLED_BACK);
  }

  /** @return {@link CacheCounter#CATCH_UP_LAYERS} */
  public long catchUpLayers() {
    return get(CacheCounter.CATCH_UP_LAYERS);
  }

  /** @return {@link CacheCounter#BACKUPS_REGISTERED} */
  public long backupsRegistered() {
    return get(CacheCounter.BACKUPS_REGISTERED);
  }

  /** @return {@link CacheCounter#BACKUPS_COMMITTED} */
  public long backupsCommitted() {
    return get(CacheCounter.BACKUPS_COMMITTED);
  }

  /** @return {@link CacheCounter#BACKUPS_FAILED} */
  public long backupsFailed() {
    return get(CacheCounter.BACKUPS_FAILED);
  }

  /** @return {@link CacheCounter#LOADS_REGISTERED} */
  public long loadsRegistered() {
    return get(CacheCounter.LOADS_REGISTERED);
  }

  /** @return {@link CacheCounter#LOADS_COMMITTED} */
  public long loadsCommitted() {
    return get(CacheCounter.LOADS_COMMITTED);
  }

  /** @return {@link CacheCounter#LOADS_FAILED} */
  public long loadsFailed() {
    return get(CacheCounter.LOADS_FAILED);
  }

  /** @return {@link CacheCounter#DEVICE_EVICTIONS} */
  public long deviceEvictions() {
    return get(CacheCounter.DEVICE_EVICTIONS);
  }

  /** @return {@link CacheCounter#HOST_EVICTIONS} */
  public long hostEvictions() {
    return get(CacheCounter.HOST_EVICTIONS);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CacheStats other && Arrays.equals(values, other.values);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    return Counts.toString("CacheStats", CacheCounter.all(), values);
  }
}
