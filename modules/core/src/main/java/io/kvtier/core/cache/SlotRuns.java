package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * A sequence of page slots held as runs of consecutive slot numbers, {@code (start, length)}
 * pairs, instead of one int per page: the device slots of a request (a growable instance) and of
 * a tree node (an exact array of pairs, through the static methods).
 *
 * <p>Why: the {@link PageAllocator} hands out the lowest free slots, so an allocation is a few
 * runs (2.6 on average on the replay of the fixed shared-prefix trace at page size 1 and 65,536
 * tokens, where a request takes 1,340 slots), and an int per page made every new slot be written
 * twice, into the request's page array at allocation and into the node's slot store at insert,
 * and read again at eviction. Runs make allocation, insert and eviction cost per run, not per
 * page; a page table is written out only when someone asks for one ({@link #copy}). The price
 * is a pool fragmented into single slots, where a run takes two ints per page instead of one.
 *
 * <p>Runs are kept merged: a run that starts where the previous one ends extends it, so the same
 * slots always have the same runs whatever allocations produced them.
 */
final class SlotRuns {
  /** {@code pairs[2k]} is the first slot of run {@code k}, {@code pairs[2k+1]} its length. */
  private int[] pairs = new int[8];

  /** Ints of {@link #pairs} in use, two per run. */
  private int used;

  /** Pages in all runs. */
  private int pages;

  /** The number of pages (slots) held. */
  int pages() {
    return pages;
  }

  /** The runs as pairs; only the first {@link #runInts()} ints are in use. Not a copy. */
  int[] runs() {
    return pairs;
  }

  /** The ints of {@link #runs()} in use, two per run. */
  int runInts() {
    return used;
  }

  /** Empties the list, keeping its array. */
  void clear() {
    used = 0;
    pages = 0;
  }

  /** Appends the run {@code [start, start + length)}, merging it with the last one if adjacent. */
  void add(int start, int length) {
    pages += length;
    if (used > 0 && pairs[used - 2] + pairs[used - 1] == start) {
      pairs[used - 1] += length;
      return;
    }
    if (used == pairs.length) {
      pairs = Arrays.copyOf(pairs, used * 2);
    }
    pairs[used] = start;
    pairs[used + 1] = length;
    used += 2;
  }

  /** The slot of page {@code i}. */
  int slot(int i) {
    return slot(pairs, used, i);
  }

  /** The runs of pages {@code [from, from + n)} as an exact array of pairs, for a tree node. */
  int[] slice(int from, int n) {
    return slice(pairs, used, from, n);
  }

  /**
   * Writes the slots of pages {@code [from, from + n)} to {@code dst[off..off+n)}, a run at a
   * time out of {@code pool} (see {@link #copy}).
   */
  void copyTo(int from, int n, int[] dst, int off, PageAllocator pool) {
    copy(pairs, from, n, dst, off, pool);
  }

  /** The slots of pages {@code [from, from + n)}, a new array; {@code pool} as in {@link #copy}. */
  int[] toArray(int from, int n, PageAllocator pool) {
    int[] out = new int[n];
    copyTo(from, n, out, 0, pool);
    return out;
  }

  /** Frees the slots of pages {@code [from, from + n)} in {@code pool}; they stay listed here. */
  void release(PageAllocator pool, int from, int n) {
    release(pairs, from, n, pool);
  }

  /** Drops the first {@code n} pages: what was page {@code n} becomes page 0. */
  void dropFront(int n) {
    if (n == 0) {
      return;
    }
    int k = 0;
    int skipped = 0;
    while (skipped + pairs[k + 1] <= n) {
      skipped += pairs[k + 1];
      k += 2;
      if (k == used) {
        used = 0;
        pages = 0;
        return;
      }
    }
    int cut = n - skipped;
    System.arraycopy(pairs, k, pairs, 0, used - k);
    used -= k;
    pairs[0] += cut;
    pairs[1] -= cut;
    pages -= n;
  }

  // ------------------------------------------------ exact pair arrays (a node's device slots)

  /** The number of pages in the runs {@code runs}. */
  static int pages(int[] runs) {
    int n = 0;
    for (int k = 1; k < runs.length; k += 2) {
      n += runs[k];
    }
    return n;
  }

  /** The slot of page {@code i} of the first {@code used} ints of {@code runs}. */
  static int slot(int[] runs, int used, int i) {
    for (int k = 0; k < used; k += 2) {
      if (i < runs[k + 1]) {
        return runs[k] + i;
      }
      i -= runs[k + 1];
    }
    throw new IndexOutOfBoundsException("page " + i + " past the runs");
  }

  /**
   * The runs of pages {@code [from, from + n)} of the first {@code used} ints of {@code runs}
   * (the runs that overlap them, cut at both ends), as an exact array.
   */
  static int[] slice(int[] runs, int used, int from, int n) {
    if (n == 0) {
      return new int[0];
    }
    int k = 0;
    while (from >= runs[k + 1]) {
      from -= runs[k + 1];
      k += 2;
    }
    // The run at k holds page `from` of it; count the runs the slice reaches.
    int last = k;
    int reach = runs[k + 1] - from;
    while (reach < n) {
      last += 2;
      reach += runs[last + 1];
    }
    int[] out = Arrays.copyOfRange(runs, k, last + 2);
    out[0] += from;
    out[1] -= from;
    out[out.length - 1] -= reach - n;
    return out;
  }

  /**
   * Writes the slots of pages {@code [from, from + n)} of {@code runs}, which must hold them, to
   * {@code dst[off..off+n)}: with the pool the runs came from, one copy per run out of its
   * identity array ({@link PageAllocator#writeRun}); with null, slot by slot, for checks and
   * copies off the request path (about 6x slower at page size 1: 2,176 slots in 330 against 50
   * ns). The walk stops after page {@code from + n - 1}, so ints of {@code runs} past the runs in
   * use are not read.
   */
  static void copy(int[] runs, int from, int n, int[] dst, int off, PageAllocator pool) {
    int k = 0;
    while (n > 0) {
      int length = runs[k + 1];
      if (from >= length) {
        from -= length;
      } else {
        int take = Math.min(length - from, n);
        int start = runs[k] + from;
        if (pool != null) {
          pool.writeRun(start, take, dst, off);
        } else {
          for (int i = 0; i < take; i++) {
            dst[off + i] = start + i;
          }
        }
        off += take;
        n -= take;
        from = 0;
      }
      k += 2;
    }
  }

  /** {@link #release} over {@code runs}, which must hold pages {@code [from, from + n)}. */
  static void release(int[] runs, int from, int n, PageAllocator pool) {
    int k = 0;
    while (n > 0) {
      int length = runs[k + 1];
      if (from >= length) {
        from -= length;
      } else {
        int take = Math.min(length - from, n);
        pool.releaseRun(runs[k] + from, take);
        n -= take;
        from = 0;
      }
      k += 2;
    }
  }

  /** The slots of the exact run array {@code runs}, one per page, in a new array. */
  static int[] toArray(int[] runs) {
    int[] out = new int[pages(runs)];
    copy(runs, 0, out.length, out, 0, null);
    return out;
  }
}
