package io.kvtier.core.cache;

import java.util.Arrays;
import java.util.Objects;
import java.util.function.ToLongFunction;

/**
 * Replicated counters of a cache's L3 tier, one per {@link L3Counter}: each changes only at
 * points every rank reaches in the same order, so ranks that took the same decisions report
 * equal stats. Read a counter by name with {@link #get}; the named accessors are shorthands for
 * the readers that had them.
 */
public final class L3Stats {
  /** No L3 activity. */
  public static final L3Stats NONE = of(c -> 0);

  private final long[] values;

  private L3Stats(long[] values) {
    this.values = Counts.checked(L3Counter.all(), values);
  }

  /**
   * Stats with the given value of each counter.
   *
   * @param values each counter's value
   * @return the stats
   * @throws IllegalArgumentException if a value is negative (counters only grow)
   */
  public static L3Stats of(ToLongFunction<L3Counter> values) {
    Objects.requireNonNull(values, "values");
    L3Counter[] all = L3Counter.all();
    long[] v = new long[all.length];
    for (L3Counter c : all) {
      v[c.ordinal()] = values.applyAsLong(c);
    }
    return new L3Stats(v);
  }

  /**
   * One counter.
   *
   * @param counter which
   * @return its value, at least 0
   */
  public long get(L3Counter counter) {
    return values[counter.ordinal()];
  }

  /** @return {@link L3Counter#WRITES_REGISTERED} */
  public long writesRegistered() {
    return get(L3Counter.WRITES_REGISTERED);
  }

  /** @return {@link L3Counter#WRITES_COMMITTED} */
  public long writesCommitted() {
    return get(L3Counter.WRITES_COMMITTED);
  }

  /** @return {@link L3Counter#WRITES_FAILED} */
  public long writesFailed() {
    return get(L3Counter.WRITES_FAILED);
  }

  /** @return {@link L3Counter#PAGES_WRITTEN} */
  public long pagesWritten() {
    return get(L3Counter.PAGES_WRITTEN);
  }

  /** @return {@link L3Counter#PREFETCHES_STARTED} */
  public long prefetchesStarted() {
    return get(L3Counter.PREFETCHES_STARTED);
  }

  /** @return {@link L3Counter#PREFETCHES_SKIPPED} */
  public long prefetchesSkipped() {
    return get(L3Counter.PREFETCHES_SKIPPED);
  }

  /** @return {@link L3Counter#PREFETCHES_TIMED_OUT} */
  public long prefetchesTimedOut() {
    return get(L3Counter.PREFETCHES_TIMED_OUT);
  }

  /** @return {@link L3Counter#PREFETCHES_ABORTED} */
  public long prefetchesAborted() {
    return get(L3Counter.PREFETCHES_ABORTED);
  }

  /** @return {@link L3Counter#PREFETCHES_DONE} */
  public long prefetchesDone() {
    return get(L3Counter.PREFETCHES_DONE);
  }

  /** @return {@link L3Counter#PAGES_RESERVED} */
  public long pagesReserved() {
    return get(L3Counter.PAGES_RESERVED);
  }

  /** @return {@link L3Counter#PAGES_INSERTED} */
  public long pagesInserted() {
    return get(L3Counter.PAGES_INSERTED);
  }

  /** @return {@link L3Counter#PAGES_DUPLICATE} */
  public long pagesDuplicate() {
    return get(L3Counter.PAGES_DUPLICATE);
  }

  /** @return {@link L3Counter#PAGES_MISSED} */
  public long pagesMissed() {
    return get(L3Counter.PAGES_MISSED);
  }

  /** @return {@link L3Counter#SNAPSHOTS_WRITTEN} */
  public long snapshotsWritten() {
    return get(L3Counter.SNAPSHOTS_WRITTEN);
  }

  /** @return {@link L3Counter#SNAPSHOTS_INSERTED} */
  public long snapshotsInserted() {
    return get(L3Counter.SNAPSHOTS_INSERTED);
  }

  /** @return {@link L3Counter#PAGES_NO_HOST_ROOM} */
  public long pagesNoHostRoom() {
    return get(L3Counter.PAGES_NO_HOST_ROOM);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof L3Stats other && Arrays.equals(values, other.values);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    return Counts.toString("L3Stats", L3Counter.all(), values);
  }
}
