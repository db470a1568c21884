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
 * <p>A replay puts every page it writes (millions) into a table far larger than the processor's
 * caches, so the store keeps no object per key and arranges its arrays so that one operation
 * touches few cache lines: an entry's key (four words) and its recency links sit side by side in
 * one array ({@value #STRIDE} words by entry), and an open-addressed table (linear probing,
 * deletion by backward shift) holds one word by slot, the low half of the key's first word beside
 * the entry index, so that a probe reads an entry only on a likely match and a deletion finds the
 * homes of the slots it shifts without reading their entries. A put of a new key into a full store
 * reads the table line of its home, the evicted entry, that entry's successor in recency order and
 * the table line of the evicted key's home, where separate arrays of keys, links and slots read
 * about seven lines (docs/PERFORMANCE.md, "The replay's key-only store"). The whole key is
 * compared: two keys that share their hashed bits are still two pages.
 */
final class KeyOnlyStore implements KvStore {
  /** Entries allocated first; the arrays double up to the capacity. */
  private static final int INITIAL_ENTRIES = 1024;

  private static final int NONE = -1;

  /** Words by entry: the key's four, then the recency links (older, newer: 32 bits each). */
  private static final int STRIDE = 5;

  private static final int LINKS = 4;

  /** The most keys one store can hold: {@value #STRIDE} words per key must fit in one array. */
  static final long MAX_PAGES = 1L << 28;

  private final long capacityPages;

  /** The entries, {@value #STRIDE} words each. */
  private long[] entries;

  /**
   * One word by slot, at most half of them used: 0 for an empty slot, else the low 32 bits of the
   * key's first word (the slot's home comes from them) above its entry index + 1.
   */
  private long[] table;

  private int mask;
  private int size;

  /** Entries allocated. */
  private int allocated;

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

  private void allocate(int count) {
    entries = entries == null ? new long[STRIDE * count] : Arrays.copyOf(entries, STRIDE * count);
    allocated = count;
    int slots = Integer.highestOneBit(Math.max(2, count) - 1) << 2;
    table = new long[slots];
    mask = slots - 1;
    for (int e = 0; e < size; e++) {
      place(e, entries[STRIDE * e]);
    }
  }

  /** The first slot to try for a key: its words are SHA-256 output, so any bits will do. */
  private int home(long h0) {
    return (int) h0 & mask;
  }

  /** The key's entry, or {@link #NONE}. */
  private int find(PageKey key) {
    long h0 = key.h0();
    long tag = h0 << 32;
    int s = home(h0);
    for (long t = table[s]; t != 0; t = table[s]) {
      int e = (int) t - 1;
      if ((t & 0xFFFF_FFFF_0000_0000L) == tag) {
        int w = STRIDE * e;
        if (entries[w] == h0
            && entries[w + 1] == key.h1()
            && entries[w + 2] == key.h2()
            && entries[w + 3] == key.h3()) {
          return e;
        }
      }
      s = (s + 1) & mask;
    }
    return NONE;
  }

  /** Puts entry {@code e}, whose first word is {@code h0}, in the first free slot from its home. */
  private void place(int e, long h0) {
    int s = home(h0);
    while (table[s] != 0) {
      s = (s + 1) & mask;
    }
    table[s] = (h0 << 32) | (e + 1L);
  }

  /** Adds a key not held, evicting the least recently used first if full. */
  private void insert(PageKey key) {
    int e;
    if (size == capacityPages) {
      e = eldest;
      unlink(e);
      removeSlot(e);
      evictions++;
    } else {
      if (size == allocated) {
        allocate((int) Math.min(capacityPages, 2L * allocated));
      }
      e = size++;
    }
    int w = STRIDE * e;
    entries[w] = key.h0();
    entries[w + 1] = key.h1();
    entries[w + 2] = key.h2();
    entries[w + 3] = key.h3();
    place(e, key.h0());
    linkNewest(e);
  }

  /** Empties the slot of entry {@code e}, shifting back the entries probed past it. */
  private void removeSlot(int e) {
    long ref = e + 1L;
    int hole = home(entries[STRIDE * e]);
    while ((table[hole] & 0xFFFF_FFFFL) != ref) {
      hole = (hole + 1) & mask;
    }
    int s = hole;
    while (true) {
      s = (s + 1) & mask;
      long t = table[s];
      if (t == 0) {
        break;
      }
      int h = (int) (t >>> 32) & mask;
      // The entry at s may move to the hole unless its home lies cyclically in (hole, s].
      boolean stays = hole <= s ? hole < h && h <= s : hole < h || h <= s;
      if (!stays) {
        table[hole] = t;
        hole = s;
      }
    }
    table[hole] = 0;
  }

  private void touch(int e) {
    if (e != newest) {
      unlink(e);
      linkNewest(e);
    }
  }

  private int older(int e) {
    return (int) (entries[STRIDE * e + LINKS] >> 32);
  }

  private int newer(int e) {
    return (int) entries[STRIDE * e + LINKS];
  }

  private void setLinks(int e, int older, int newer) {
    entries[STRIDE * e + LINKS] = ((long) older << 32) | (newer & 0xFFFF_FFFFL);
  }

  private void unlink(int e) {
    int p = older(e);
    int n = newer(e);
    if (p == NONE) {
      eldest = n;
    } else {
      setLinks(p, older(p), n);
    }
    if (n == NONE) {
      newest = p;
    } else {
      setLinks(n, p, newer(n));
    }
  }

  private void linkNewest(int e) {
    setLinks(e, newest, NONE);
    if (newest == NONE) {
      eldest = e;
    } else {
      setLinks(newest, older(newest), e);
    }
    newest = e;
  }
}
