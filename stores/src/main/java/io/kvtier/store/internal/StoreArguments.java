package io.kvtier.store.internal;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import java.util.List;
import java.util.Objects;

/**
 * Checks the arguments of a store call before the store touches anything, so that a rejected
 * call has stored, loaded and counted nothing.
 */
public final class StoreArguments {

  private StoreArguments() {}

  /**
   * Checks a key list: not null and no null element.
   *
   * @param op the operation, for messages
   * @param keys the keys
   * @throws NullPointerException naming the null list or the index of the null key
   */
  public static void checkKeys(String op, List<PageKey> keys) {
    Objects.requireNonNull(keys, () -> op + ": keys is null");
    for (int i = 0; i < keys.size(); i++) {
      if (keys.get(i) == null) {
        throw new NullPointerException(op + ": keys[" + i + "] is null");
      }
    }
  }

  /**
   * Checks a batch of {@code get} or {@code put}: keys as in {@link #checkKeys}, one host page
   * per key, each inside the pool, and a pool of the store's layout.
   *
   * @param op the operation, for messages
   * @param layout the store's layout
   * @param keys the keys
   * @param host the host pool
   * @param hostPages the host page of each key
   * @throws NullPointerException for a null argument or key
   * @throws IllegalArgumentException if the lengths differ or the pool's layout is another
   * @throws IndexOutOfBoundsException if a host page is outside the pool
   */
  public static void checkBatch(
      String op, KvLayout layout, List<PageKey> keys, HostMemory host, int[] hostPages) {
    checkKeys(op, keys);
    Objects.requireNonNull(host, () -> op + ": host is null");
    Objects.requireNonNull(hostPages, () -> op + ": hostPages is null");
    if (keys.size() != hostPages.length) {
      throw new IllegalArgumentException(
          op
              + ": keys.size()="
              + keys.size()
              + " but hostPages.length="
              + hostPages.length
              + ": give exactly one host page per key");
    }
    KvLayout hostLayout = host.spec().layout();
    if (!hostLayout.equals(layout)) {
      throw new IllegalArgumentException(
          op
              + ": the host pool's layout "
              + hostLayout
              + " is not the store's "
              + layout
              + ": a store holds pages of one layout; open it with the host pool's layout");
    }
    int pages = host.spec().pages();
    for (int i = 0; i < hostPages.length; i++) {
      if (hostPages[i] < 0 || hostPages[i] >= pages) {
        throw new IndexOutOfBoundsException(
            op
                + ": hostPages["
                + i
                + "]="
                + hostPages[i]
                + " is outside the host pool of "
                + pages
                + " pages");
      }
    }
  }

  /**
   * The byte size of one stored page as an {@code int}, for stores that weigh or buffer pages.
   *
   * @param store the store's name, for messages
   * @param layout the layout
   * @return {@code layout.pageBytes()}
   * @throws IllegalArgumentException if a page is larger than {@link Integer#MAX_VALUE} bytes
   */
  public static int pageBytesAsInt(String store, KvLayout layout) {
    long bytes = layout.pageBytes();
    if (bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "the "
              + store
              + " store holds pages of at most "
              + Integer.MAX_VALUE
              + " bytes, but layout "
              + layout
              + " has pageBytes="
              + bytes
              + ": use smaller pages (fewer tokens per page)");
    }
    return (int) bytes;
  }
}
