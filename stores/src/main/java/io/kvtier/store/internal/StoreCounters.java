package io.kvtier.store.internal;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvStoreStats;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters of {@link KvStoreStats}, also reported to the context's metrics as {@code
 * <prefix>.hits}, {@code .misses}, {@code .corrupt}, {@code .puts} and {@code .evictions}. Calls
 * come per batch, never per byte. Thread-safe.
 */
public final class StoreCounters {

  private final BackendMetrics metrics;
  private final String prefix;
  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder corrupt = new LongAdder();
  private final LongAdder puts = new LongAdder();
  private final LongAdder evictions = new LongAdder();

  /**
   * Creates zero counters.
   *
   * @param metrics where to report
   * @param prefix the metric name prefix, for example {@code store.file}
   */
  public StoreCounters(BackendMetrics metrics, String prefix) {
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    this.prefix = Objects.requireNonNull(prefix, "prefix");
  }

  /**
   * Counts pages returned by {@code get}.
   *
   * @param n pages
   */
  public void hits(long n) {
    add(hits, "hits", n);
  }

  /**
   * Counts pages asked for by {@code get} and not returned.
   *
   * @param n pages
   */
  public void misses(long n) {
    add(misses, "misses", n);
  }

  /**
   * Counts pages found damaged.
   *
   * @param n pages
   */
  public void corrupt(long n) {
    add(corrupt, "corrupt", n);
  }

  /**
   * Counts pages stored by {@code put}.
   *
   * @param n pages
   */
  public void puts(long n) {
    add(puts, "puts", n);
  }

  /**
   * Counts pages dropped to respect the capacity.
   *
   * @param n pages
   */
  public void evictions(long n) {
    add(evictions, "evictions", n);
  }

  /**
   * A snapshot.
   *
   * @param bytesStored the bytes of page data held now
   * @return the stats
   */
  public KvStoreStats snapshot(long bytesStored) {
    return new KvStoreStats(
        hits.sum(), misses.sum(), corrupt.sum(), puts.sum(), evictions.sum(), bytesStored);
  }

  private void add(LongAdder counter, String name, long n) {
    if (n > 0) {
      counter.add(n);
      metrics.increment(prefix + "." + name, n);
    }
  }
}
