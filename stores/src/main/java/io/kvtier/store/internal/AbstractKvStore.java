package io.kvtier.store.internal;

import io.kvtier.spi.DamageableKvStore;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.List;
import java.util.Objects;

/**
 * The skeleton of the {@code memory} and {@code file} stores: each {@link KvStore} call enters
 * the {@link StoreGate} (so a call after {@code close()} fails fast and close waits for calls in
 * flight), checks its arguments ({@link StoreArguments}), walks the batch in key order and counts
 * hits, misses and puts ({@link StoreCounters}). A store says only how its medium finds, reads,
 * writes and releases one page.
 *
 * <p>Each store checks every page it reads against a CRC32C taken when the page was stored, and
 * counts a page that fails in {@link KvStoreStats#corrupt()}: a miss, never data. {@link
 * #flipStoredBit} damages a stored page at rest (a testing hook) so that tests can prove it.
 *
 * <p>The prefix rules of the SPI live here once: {@code existsPrefix} and {@code get} stop at the
 * first page missing, a {@code put} stops at the first page it could not write (pages after it
 * are useless as a prefix) and returns how long a prefix of its keys the store now holds.
 */
public abstract class AbstractKvStore implements DamageableKvStore {
  /** What became of one page of a put. */
  protected enum Written {
    /** Written, and new to the store. */
    NEW,
    /** Present already (a key names its page's bytes), or put by a concurrent call first. */
    PRESENT,
    /** Not written: the put stops here. */
    FAILED
  }

  /** The layout of every page the store holds. */
  protected final KvLayout layout;

  /** Hits, misses, corrupt pages, puts and evictions, mirrored to the backend's metrics. */
  protected final StoreCounters counters;

  private final StoreGate gate;

  /**
   * A store over {@code layout}.
   *
   * @param layout the page layout
   * @param counters the store's counters
   * @param storeName the store, for messages, for example {@code memory store 'ns'}
   */
  protected AbstractKvStore(KvLayout layout, StoreCounters counters, String storeName) {
    this.layout = Objects.requireNonNull(layout, "layout");
    this.counters = Objects.requireNonNull(counters, "counters");
    this.gate = new StoreGate(storeName);
  }

  /**
   * Whether the store holds the page, as {@code existsPrefix} asks: not a use of the page.
   *
   * @param key the page's key
   * @return true if a {@code get} would likely find it
   */
  protected abstract boolean exists(PageKey key);

  /**
   * Copies one page into a host page.
   *
   * @param key the page's key
   * @param host the host pool
   * @param hostPage the page of {@code host} to fill
   * @return true if the page was found and copied whole; false is a miss
   */
  protected abstract boolean read(PageKey key, HostMemory host, int hostPage);

  /**
   * Stores one host page under {@code key} unless the store holds it already.
   *
   * @param key the page's key
   * @param host the host pool
   * @param hostPage the page of {@code host} to copy
   * @return what became of the page
   */
  protected abstract Written write(PageKey key, HostMemory host, int hostPage);

  /**
   * Whether the store holds the page after a put, for the prefix the put returns.
   *
   * @param key the page's key
   * @return true if held
   */
  protected abstract boolean holds(PageKey key);

  /**
   * Bytes of the pages held, for {@link #stats()}.
   *
   * @return bytes
   */
  protected abstract long bytesStored();

  /**
   * Flips one bit of the stored form of a page, behind the store's back ({@link
   * DamageableKvStore#flipStoredBit}).
   *
   * @param key the page's key
   * @param bit which bit, modulo the bits of the stored form
   * @return true if the page was held and a bit flipped
   */
  protected abstract boolean flip(PageKey key, long bit);

  /** After the writes of a put, before its prefix is counted; also before {@link #stats()}. */
  protected void settle() {}

  /** Releases the medium, once, with no call in flight. The default keeps everything. */
  protected void release() {}

  @Override
  public final int existsPrefix(List<PageKey> keys) {
    gate.enter("existsPrefix");
    try {
      StoreArguments.checkKeys("existsPrefix", keys);
      int n = 0;
      while (n < keys.size() && exists(keys.get(n))) {
        n++;
      }
      return n;
    } finally {
      gate.exit();
    }
  }

  @Override
  public final int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
    gate.enter("get");
    try {
      StoreArguments.checkBatch("get", layout, keys, host, hostPages);
      int n = 0;
      while (n < keys.size() && read(keys.get(n), host, hostPages[n])) {
        n++;
      }
      counters.hits(n);
      counters.misses(keys.size() - n);
      return n;
    } finally {
      gate.exit();
    }
  }

  @Override
  public final int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
    gate.enter("put");
    try {
      StoreArguments.checkBatch("put", layout, keys, host, hostPages);
      int stored = 0;
      for (int i = 0; i < keys.size(); i++) {
        Written outcome = write(keys.get(i), host, hostPages[i]);
        if (outcome == Written.FAILED) {
          break;
        }
        if (outcome == Written.NEW) {
          stored++;
        }
      }
      counters.puts(stored);
      settle();
      int n = 0;
      while (n < keys.size() && holds(keys.get(n))) {
        n++;
      }
      return n;
    } finally {
      gate.exit();
    }
  }

  @Override
  public final boolean flipStoredBit(PageKey key, long bit) {
    gate.enter("flipStoredBit");
    try {
      return flip(Objects.requireNonNull(key, "key"), bit);
    } finally {
      gate.exit();
    }
  }

  /** The counters, after {@link #settle()} if the store is open; readable after close. */
  @Override
  public final KvStoreStats stats() {
    if (gate.tryEnter()) {
      try {
        settle();
      } finally {
        gate.exit();
      }
    }
    return counters.snapshot(bytesStored());
  }

  /** Runs {@link #release()} once, after the calls in flight; later calls fail fast. */
  @Override
  public final void close() {
    gate.closeOnce(this::release);
  }
}
