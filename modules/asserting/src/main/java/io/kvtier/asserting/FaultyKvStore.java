package io.kvtier.asserting;

import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DamageableKvStore;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An L3 store wrapper that injects faults, deterministically per (seed, page key): a put that
 * silently drops some pages (a shard that lost them: the next probe finds a shorter prefix), a
 * get that fails on some pages (read as corrupt: a miss), and calls that throw. Since every
 * rank's keys are salted with its rank, the faults differ between ranks, as real shards would.
 *
 * <p>With a flip probability it also damages stored pages at rest: before a get reads a page
 * drawn for it (per page and get call), one bit of the page's stored form is flipped through the
 * store's {@link DamageableKvStore} hook, and the page is read at once, alone, so that the store's
 * own check meets every flip: a store that checks counts each one in {@code
 * KvStoreStats.corrupt()} and answers a miss there ({@link #flipsInjected()} equals the corrupt
 * pages it counted); a store that does not check returns the damaged bytes.
 */
public final class FaultyKvStore implements KvStore {
  private final KvStore delegate;
  private final long seed;
  private final double probability;
  private final BackendMetrics metrics;
  // The chance that a call throws; negative: three draws of probability must all hit.
  private final double throwProbability;
  private final double flipProbability;
  private final AtomicLong getCalls = new AtomicLong();
  private final AtomicLong flips = new AtomicLong();

  /**
   * Wraps a store.
   *
   * @param delegate the real store
   * @param seed the seed of the fault draws
   * @param probability the chance, 0 to 1, that a page is dropped at its put, fails at a get,
   *     or (its cube) that a whole call throws
   */
  public FaultyKvStore(KvStore delegate, long seed, double probability) {
    this(delegate, seed, probability, -1, 0, BackendMetrics.NOOP);
  }

  /**
   * Wraps a store, and flips bits of its stored pages.
   *
   * @param delegate the real store; a {@link DamageableKvStore} if {@code flipProbability > 0}
   * @param seed the seed of the fault draws
   * @param probability the chance, 0 to 1, that a page is dropped at its put, fails at a get,
   *     or (its cube) that a whole call throws
   * @param flipProbability the chance, 0 to 1, that a page a get is about to read has one bit of
   *     its stored form flipped first
   * @throws IllegalArgumentException for a probability outside [0, 1], or flips asked of a store
   *     that cannot be damaged
   */
  public FaultyKvStore(KvStore delegate, long seed, double probability, double flipProbability) {
    this(delegate, seed, probability, -1, flipProbability, BackendMetrics.NOOP);
  }

  /**
   * Wraps a store and counts the faults it injects: {@code store.faulty.dropped} (pages a put
   * dropped), {@code store.faulty.failed} (gets cut short by a failing page), {@code
   * store.faulty.thrown} (calls that threw) and {@code store.faulty.flipped} (stored bits flipped).
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
    this(delegate, seed, probability, throwProbability, 0, metrics);
  }

  /**
   * Wraps a store with every kind of fault: dropped and failing pages, throwing calls, flipped
   * stored bits, each counted.
   *
   * @param delegate the real store; a {@link DamageableKvStore} if {@code flipProbability > 0}
   * @param seed the seed of the fault draws
   * @param probability the chance, 0 to 1, that a page is dropped at its put or fails at a get
   * @param throwProbability the chance, 0 to 1, that a whole call throws, or negative for the
   *     rule of {@link #FaultyKvStore(KvStore, long, double)}
   * @param flipProbability the chance, 0 to 1, that a page a get is about to read has one bit of
   *     its stored form flipped first
   * @param metrics where the injected faults are counted
   * @throws IllegalArgumentException for a probability outside its range, or flips asked of a
   *     store that cannot be damaged
   */
  public FaultyKvStore(
      KvStore delegate,
      long seed,
      double probability,
      double throwProbability,
      double flipProbability,
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
    if (!(flipProbability >= 0 && flipProbability <= 1)) {
      throw new IllegalArgumentException(
          "flipProbability=" + flipProbability + " must be in [0, 1]");
    }
    if (flipProbability > 0 && !(delegate instanceof DamageableKvStore)) {
      throw new IllegalArgumentException(
          "cannot flip bits of stored pages in "
              + delegate.getClass().getName()
              + ": it is not a DamageableKvStore (the memory, file and hazelcast stores are)");
    }
    this.seed = seed;
    this.probability = probability;
    this.throwProbability = throwProbability;
    this.flipProbability = flipProbability;
  }

  /**
   * Bits flipped in stored pages so far, each in a page that a get read right after.
   *
   * @return the count
   */
  public long flipsInjected() {
    return flips.get();
  }

  private boolean draw(PageKey key, long salt) {
    return draw(key, salt, probability);
  }

  private boolean draw(PageKey key, long salt, double chance) {
    return unit(key, salt) < chance;
  }

  private double unit(PageKey key, long salt) {
    return (mix(key, salt) >>> 11) * 0x1.0p-53;
  }

  private long mix(PageKey key, long salt) {
    long z = key.h0() ^ key.h3() ^ seed ^ salt * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
    z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
    return z ^ (z >>> 33);
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
    if (flipProbability == 0) {
      return delegate.get(keys.subList(0, n), host, Arrays.copyOf(hostPages, n));
    }
    // Salted by the call too: a page dropped as damaged and put again may read fine next time.
    long call = getCalls.getAndIncrement() * 4 + 5;
    int done = 0;
    while (done < n) {
      int flip = done;
      while (flip < n && !(unit(keys.get(flip), call) < flipProbability)) {
        flip++;
      }
      if (flip > done) {
        int got =
            delegate.get(keys.subList(done, flip), host, Arrays.copyOfRange(hostPages, done, flip));
        done += Math.max(0, Math.min(got, flip - done));
        if (done < flip) {
          return done;
        }
      }
      if (flip == n) {
        return done;
      }
      PageKey key = keys.get(flip);
      if (((DamageableKvStore) delegate).flipStoredBit(key, mix(key, call + 2))) {
        flips.incrementAndGet();
        metrics.increment("store.faulty.flipped", 1);
      }
      if (delegate.get(List.of(key), host, new int[] {hostPages[flip]}) < 1) {
        return done;
      }
      done++;
    }
    return done;
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
      delegate.put(kept, host, Arrays.copyOf(slots, kept.size()));
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
