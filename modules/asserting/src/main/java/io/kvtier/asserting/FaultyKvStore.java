package io.kvtier.asserting;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An L3 store wrapper that injects faults, deterministically per (seed, page key): a put that
 * silently drops some pages (a shard that lost them: the next probe finds a shorter prefix), a
 * get that fails on some pages (read as corrupt: a miss), and calls that throw. Since every
 * rank's keys are salted with its rank, the faults differ between ranks, as real shards would.
 */
public final class FaultyKvStore implements KvStore {
  private final KvStore delegate;
  private final long seed;
  private final double probability;
  private final BackendMetrics metrics;
  // The chance that a call throws; negative: three draws of probability must all hit.
  private final double throwProbability;

  /**
   * Wraps a store.
   *
   * @param delegate the real store
   * @param seed the seed of the fault draws
   * @param probability the chance, 0 to 1, that a page is dropped at its put, fails at a get,
   *     or (its cube) that a whole call throws
   */
  public FaultyKvStore(KvStore delegate, long seed, double probability) {
    this(delegate, seed, probability, -1, BackendMetrics.NOOP);
  }

  /**
   * Wraps a store and counts the faults it injects: {@code store.faulty.dropped} (pages a put
   * dropped), {@code store.faulty.failed} (gets cut short by a failing page) and {@code
   * store.faulty.thrown} (calls that threw).
   *
   * @param delegate the real store
   * @param seed the seed of the fault draws
   * @param probability the chance, 0 to 1, that a page is dropped at its put or fails at a get
   * @param throwProbability the chance, 0 to 1, that a whole call throws (drawn on its first
   *     key), or negative for the rule of {@link #FaultyKvStore(KvStore, long, double)}
   * @param metrics where the injected faults are counted
   */
  public FaultyKvStore(
      KvStore delegate,
      long seed,
      double probability,
      double throwProbability,
      BackendMetrics metrics) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    if (!(probability >= 0 && probability <= 1)) {
      throw new IllegalArgumentException("probability=" + probability + " must be in [0, 1]");
    }
    if (!(throwProbability <= 1) || Double.isNaN(throwProbability)) {
      throw new IllegalArgumentException(
          "throwProbability=" + throwProbability + " must be at most 1 (negative: the default)");
    }
    this.seed = seed;
    this.probability = probability;
    this.throwProbability = throwProbability;
  }

  private boolean draw(PageKey key, long salt) {
    return draw(key, salt, probability);
  }

  private boolean draw(PageKey key, long salt, double chance) {
    long z = key.h0() ^ key.h3() ^ seed ^ salt * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
    z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
    z ^= z >>> 33;
    return (z >>> 11) * 0x1.0p-53 < chance;
  }

  private void maybeThrow(List<PageKey> keys, String call) {
    if (keys.isEmpty()) {
      return;
    }
    boolean thrown =
        throwProbability >= 0
            ? draw(keys.get(0), call.hashCode() * 13L + 5, throwProbability)
            : probability > 0
                && draw(keys.get(0), call.hashCode() * 31L + 7)
                && draw(keys.get(0), call.hashCode() * 17L + 3)
                && draw(keys.get(0), 11);
    if (thrown) {
      metrics.increment("store.faulty.thrown", 1);
      throw new IllegalStateException("injected failure of L3 " + call);
    }
  }

  @Override
  public int existsPrefix(List<PageKey> keys) {
    maybeThrow(keys, "existsPrefix");
    return delegate.existsPrefix(keys);
  }

  @Override
  public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
    maybeThrow(keys, "get");
    int n = 0;
    while (n < keys.size() && !draw(keys.get(n), 2)) {
      n++;
    }
    if (n < keys.size()) {
      metrics.increment("store.faulty.failed", 1);
    }
    if (n == 0) {
      return 0;
    }
    return delegate.get(keys.subList(0, n), host, java.util.Arrays.copyOf(hostPages, n));
  }

  @Override
  public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
    maybeThrow(keys, "put");
    List<PageKey> kept = new ArrayList<>(keys.size());
    int[] slots = new int[keys.size()];
    for (int i = 0; i < keys.size(); i++) {
      if (!draw(keys.get(i), 1)) {
        slots[kept.size()] = hostPages[i];
        kept.add(keys.get(i));
      }
    }
    if (kept.size() < keys.size()) {
      metrics.increment("store.faulty.dropped", keys.size() - kept.size());
    }
    if (!kept.isEmpty()) {
      delegate.put(kept, host, java.util.Arrays.copyOf(slots, kept.size()));
    }
    return delegate.existsPrefix(keys);
  }

  @Override
  public KvStoreStats stats() {
    return delegate.stats();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
