package io.kvtier.core.cache;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A hand-written L3 store for tests: pages on the heap by key, with switches to fail every put or
 * the put of given keys, to lose stored pages (a shard that evicted them) and to serve damaged
 * pages as misses.
 */
final class FakeKvStore implements KvStore {
  private final Map<PageKey, byte[][]> pages = new HashMap<>();

  /** Keys whose get fails as a corrupt page would: a miss. */
  final Set<PageKey> corrupt = new HashSet<>();

  /** Keys whose put fails: the put stores the keys before the first of them and stops. */
  final Set<PageKey> failPutKeys = new HashSet<>();

  boolean failPuts;
  int puts;
  int gets;
  int misses;

  @Override
  public synchronized int existsPrefix(List<PageKey> keys) {
    int n = 0;
    while (n < keys.size() && pages.containsKey(keys.get(n))) {
      n++;
    }
    return n;
  }

  @Override
  public synchronized int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
    int n = 0;
    for (; n < keys.size(); n++) {
      byte[][] page = pages.get(keys.get(n));
      if (page == null || corrupt.contains(keys.get(n))) {
        misses += keys.size() - n;
        break;
      }
      for (int layer = 0; layer < page.length; layer++) {
        MemorySegment.copy(
            MemorySegment.ofArray(page[layer]),
            0,
            host.block(hostPages[n], layer),
            0,
            page[layer].length);
      }
      gets++;
    }
    return n;
  }

  @Override
  public synchronized int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
    if (failPuts) {
      return 0;
    }
    int layers = host.spec().layout().layers();
    for (int i = 0; i < keys.size(); i++) {
      if (failPutKeys.contains(keys.get(i))) {
        return i;
      }
      byte[][] page = new byte[layers][];
      for (int layer = 0; layer < layers; layer++) {
        page[layer] =
            host.block(hostPages[i], layer).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
      }
      pages.put(keys.get(i), page);
      puts++;
    }
    return keys.size();
  }

  synchronized int size() {
    return pages.size();
  }

  synchronized boolean contains(PageKey key) {
    return pages.containsKey(key);
  }

  /** The bytes stored under {@code key}, one array per layer, or null. */
  synchronized byte[][] page(PageKey key) {
    return pages.get(key);
  }

  /** Forgets one stored page, as a shard that evicted it. */
  synchronized void drop(PageKey key) {
    pages.remove(key);
  }

  @Override
  public synchronized KvStoreStats stats() {
    return new KvStoreStats(gets, misses, corrupt.size(), puts, 0, 0);
  }

  @Override
  public void close() {}
}
