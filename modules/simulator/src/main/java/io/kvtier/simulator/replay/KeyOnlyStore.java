package io.kvtier.simulator.replay;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An L3 store of page keys without their bytes, bounded in pages and evicting the least recently
 * used key (a get or a put is a use; a probe is not): the capacity side of an L3 tier for a
 * replay, whose pages need no content. Thread-safe, as the SPI asks, though the replay calls it
 * from one thread (the inline L3 executor).
 */
final class KeyOnlyStore implements KvStore {
  private final long capacityPages;
  private final LinkedHashMap<PageKey, Boolean> keys;
  private long hits;
  private long misses;
  private long puts;
  private long evictions;

  /**
   * An empty store.
   *
   * @param capacityPages the most keys it keeps, at least 1
   */
  KeyOnlyStore(long capacityPages) {
    if (capacityPages < 1) {
      throw new IllegalArgumentException("capacityPages=" + capacityPages + " must be >= 1");
    }
    this.capacityPages = capacityPages;
    this.keys =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<PageKey, Boolean> eldest) {
            if (size() > KeyOnlyStore.this.capacityPages) {
              evictions++;
              return true;
            }
            return false;
          }
        };
  }

  @Override
  public synchronized int existsPrefix(List<PageKey> prefix) {
    int n = 0;
    // containsKey does not reorder an access-ordered map: a probe is not a use.
    while (n < prefix.size() && keys.containsKey(prefix.get(n))) {
      n++;
    }
    return n;
  }

  @Override
  public synchronized int get(List<PageKey> prefix, HostMemory host, int[] hostPages) {
    int n = 0;
    while (n < prefix.size() && keys.get(prefix.get(n)) != null) {
      n++;
    }
    hits += n;
    misses += n < prefix.size() ? 1 : 0;
    return n;
  }

  @Override
  public synchronized int put(List<PageKey> pages, HostMemory host, int[] hostPages) {
    for (PageKey key : pages) {
      keys.put(key, Boolean.TRUE);
      puts++;
    }
    int n = 0;
    while (n < pages.size() && keys.containsKey(pages.get(n))) {
      n++;
    }
    return n;
  }

  @Override
  public synchronized KvStoreStats stats() {
    return new KvStoreStats(hits, misses, 0, puts, evictions, 0);
  }

  /**
   * The keys held now.
   *
   * @return the count
   */
  synchronized int size() {
    return keys.size();
  }

  @Override
  public void close() {}
}
