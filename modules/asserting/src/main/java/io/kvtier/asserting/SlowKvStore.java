package io.kvtier.asserting;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;

/**
 * An L3 store wrapper whose every probe, get and put first waits a fixed delay: a store behind a
 * slow network or disk, which the L3 prefetch timeout and the write path must live with.
 */
public final class SlowKvStore implements KvStore {
  private final KvStore delegate;
  private final long delayNanos;

  /**
   * Wraps a store.
   *
   * @param delegate the real store
   * @param delay the wait before each probe, get and put; not negative
   */
  public SlowKvStore(KvStore delegate, Duration delay) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("delay=" + delay + " must not be negative");
    }
    this.delayNanos = delay.toNanos();
  }

  private void pause() {
    long end = System.nanoTime() + delayNanos;
    for (long left = delayNanos; left > 0; left = end - System.nanoTime()) {
      LockSupport.parkNanos(left);
    }
  }

  @Override
  public int existsPrefix(List<PageKey> keys) {
    pause();
    return delegate.existsPrefix(keys);
  }

  @Override
  public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
    pause();
    return delegate.get(keys, host, hostPages);
  }

  @Override
  public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
    pause();
    return delegate.put(keys, host, hostPages);
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
