package io.kvtier.simulator.replay;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.Arrays;
import java.util.List;

/**
 * An L3 store of page keys without their bytes, bounded in pages and evicting the least recently
 * used key (a get or a put is a use; a probe is not): the capacity side of an L3 tier for a
 * replay, whose pages need no content. Thread-safe, as the SPI asks, though the replay calls it
 * from one thread (the inline L3 executor).
 *
 * <p>A replay puts every page it writes (millions), so the store keeps no object per key: the
 * keys' 256 bits sit in a {@code long} array by entry, an open-addressed table (linear probing,
 * deletion by backward shift) maps a key to its entry, and the recency order is a doubly linked
 * list of entry indices. The whole key is compared: two keys that share their hashed bits are
 * still two pages.
 */
final class KeyOnlyStore implements KvStore {
  /** Entries allocated first; the arrays double up to the capacity. */
  private static final int INITIAL_ENTRIES = 1024;

  private static final int NONE = -1;

  /** The most keys one store can hold: four words per key must fit in one array. */
  static final long MAX_PAGES = 1L << 28;

  private final long capacityPages;

  /** The keys, four words per entry. */
  private long[] words;

  /** Recency links by entry: toward the least recently used ({@link #prev}) and the most. */
  private int[] prev;

  private int[] next;

  /**
   * Two words by slot, at most half of them used: a key's first word, so that a probe reads the
   * entries only on a likely match, and its entry index + 1 (0: an empty slot).
   */
  private long[] table;

  /** The slot of each entry. */
  private int[] slotOf;

  private int mask;
  private int size;

  /** The least recently used entry, and the most; {@link #NONE} when empty. */
  private int eldest = NONE;

  private int newest = NONE;

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
    if (capacityPages > MAX_PAGES) {
      throw new IllegalArgumentException(
          "capacityPages=" + capacityPages + " must be <= " + MAX_PAGES);
    }
    this.capacityPages = capacityPages;
    allocate((int) Math.min(capacityPages, INITIAL_ENTRIES));
  }

  @Override
  public synchronized int existsPrefix(List<PageKey> prefix) {
    int n = 0;
    // A probe is not a use: it does not reorder.
    while (n < prefix.size() && find(prefix.get(n)) != NONE) {
      n++;
    }
    return n;
  }

  @Override
  public synchronized int get(List<PageKey> prefix, HostMemory host, int[] hostPages) {
    int n = 0;
    while (n < prefix.size()) {
      int e = find(prefix.get(n));
      if (e == NONE) {
        break;
      }
      touch(e);
      n++;
    }
    hits += n;
    misses += n < prefix.size() ? 1 : 0;
    return n;
  }

  @Override
  public synchronized int put(List<PageKey> pages, HostMemory host, int[] hostPages) {
    for (PageKey key : pages) {
      int e = find(key);
      if (e == NONE) {
        insert(key);
      } else {
        touch(e);
      }
      puts++;
    }
    if (pages.size() <= capacityPages) {
      // The last pages.size() keys used are all kept.
      return pages.size();
    }
    int n = 0;
    while (n < pages.size() && find(pages.get(n)) != NONE) {
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
    return size;
  }

  @Override
  public void close() {}

  // ---------------------------------------------------------------- the table

  private void allocate(int entries) {
    words = words == null ? new long[4 * entries] : Arrays.copyOf(words, 4 * entries);
    prev = prev == null ? new int[entries] : Arrays.copyOf(prev, entries);
    next = next == null ? new int[entries] : Arrays.copyOf(next, entries);
    slotOf = slotOf == null ? new int[entries] : Arrays.copyOf(slotOf, entries);
    int slots = Integer.highestOneBit(Math.max(2, entries) - 1) << 2;
    table = new long[2 * slots];
    mask = slots - 1;
    for (int e = 0; e < size; e++) {
      place(e, words[4 * e]);
    }
  }

  /** The first slot to try for a key: its words are SHA-256 output, so any bits will do. */
  private int home(long h0) {
    return (int) (h0 ^ (h0 >>> 32)) & mask;
  }

  /** The key's entry, or {@link #NONE}. */
  private int find(PageKey key) {
    long h0 = key.h0();
    int s = home(h0);
    for (long t = table[2 * s + 1]; t != 0; t = table[2 * s + 1]) {
      int e = (int) t - 1;
      if (table[2 * s] == h0
          && words[4 * e + 1] == key.h1()
          && words[4 * e + 2] == key.h2()
          && words[4 * e + 3] == key.h3()) {
        return e;
      }
      s = (s + 1) & mask;
    }
    return NONE;
  }

  /** Puts entry {@code e}, whose first word is {@code h0}, in the first free slot from its home. */
  private void place(int e, long h0) {
    int s = home(h0);
    while (table[2 * s + 1] != 0) {
      s = (s + 1) & mask;
    }
    table[2 * s] = h0;
    table[2 * s + 1] = e + 1;
    slotOf[e] = s;
  }

  /** Adds a key not held, evicting the least recently used first if full. */
  private void insert(PageKey key) {
    int e;
    if (size == capacityPages) {
      e = eldest;
      unlink(e);
      removeSlot(slotOf[e]);
      evictions++;
    } else {
      if (size == prev.length) {
        allocate((int) Math.min(capacityPages, 2L * prev.length));
      }
      e = size++;
    }
    int w = 4 * e;
    words[w] = key.h0();
    words[w + 1] = key.h1();
    words[w + 2] = key.h2();
    words[w + 3] = key.h3();
    place(e, key.h0());
    linkNewest(e);
  }

  /** Empties slot {@code hole}, shifting back the entries probed past it. */
  private void removeSlot(int hole) {
    int s = hole;
    while (true) {
      s = (s + 1) & mask;
      long t = table[2 * s + 1];
      if (t == 0) {
        break;
      }
      int h = home(table[2 * s]);
      // The entry at s may move to the hole unless its home lies cyclically in (hole, s].
      boolean stays = hole <= s ? hole < h && h <= s : hole < h || h <= s;
      if (!stays) {
        table[2 * hole] = table[2 * s];
        table[2 * hole + 1] = t;
        slotOf[(int) t - 1] = hole;
        hole = s;
      }
    }
    table[2 * hole] = 0;
    table[2 * hole + 1] = 0;
  }

  private void touch(int e) {
    if (e != newest) {
      unlink(e);
      linkNewest(e);
    }
  }

  private void unlink(int e) {
    int p = prev[e];
    int n = next[e];
    if (p == NONE) {
      eldest = n;
    } else {
      next[p] = n;
    }
    if (n == NONE) {
      newest = p;
    } else {
      prev[n] = p;
    }
  }

  private void linkNewest(int e) {
    prev[e] = newest;
    next[e] = NONE;
    if (newest == NONE) {
      eldest = e;
    } else {
      next[newest] = e;
    }
    newest = e;
  }
}
