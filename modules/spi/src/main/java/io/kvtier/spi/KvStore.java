package io.kvtier.spi;

import java.util.List;

/**
 * An L3 page store keyed by {@link PageKey}. Pages move between the store and host pages only;
 * the device never talks to the store. A missing, failed or corrupt page is a miss (counted in
 * {@link #stats()}), never an exception from {@link #get} and never returned as data.
 * Implementations are thread-safe.
 */
public interface KvStore extends AutoCloseable {

  /**
   * How many of {@code keys}, counted from the first, are present consecutively. A later page
   * without its predecessors is useless for a prefix, so counting stops at the first absent key.
   *
   * @param keys the page keys of a prefix, in order
   * @return the length of the present prefix, {@code 0 <= n <= keys.size()}
   */
  int existsPrefix(List<PageKey> keys);

  /**
   * Loads pages into host pages, in order, stopping at the first page that is absent or fails.
   *
   * @param keys page keys in prefix order
   * @param host the host pool
   * @param hostPages destination host page of each key, same length as {@code keys}
   * @return how many pages, from the first, were loaded; pages after that hold undefined bytes
   */
  int get(List<PageKey> keys, HostMemory host, int[] hostPages);

  /**
   * Stores host pages under their keys. Storing a key that is present is allowed and may be
   * skipped.
   *
   * @param keys page keys
   * @param host the host pool
   * @param hostPages source host page of each key, same length as {@code keys}
   * @return how many pages are present in the store afterwards among {@code keys}, counted from
   *     the first
   */
  int put(List<PageKey> keys, HostMemory host, int[] hostPages);

  /**
   * The store's counters.
   *
   * @return a snapshot
   */
  KvStoreStats stats();

  /** Releases the store's resources (not its persistent data). Idempotent. */
  @Override
  void close();
}
