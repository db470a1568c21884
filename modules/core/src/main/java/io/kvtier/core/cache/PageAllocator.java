package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * The page allocator of one pool: one bit per slot (set = allocated), handing out the lowest free
 * slots first.
 *
 * <p>Design note (hot path): at page size 1 a request allocates, and eviction frees, thousands of
 * slots, so per-slot work dominated the replay of a full pool when free slots were a stack of slot
 * numbers with an ownership check per slot. Slots therefore move in runs of consecutive numbers: an
 * allocation finds the free runs 64 slots per bitmap word and appends them to a {@link SlotRuns}
 * (device pages) or fills the caller's array (host pages); a release of a run checks and clears its
 * bits a word at a time, and a release of an array finds its runs with one {@code Arrays.mismatch}
 * against {@link #iota} (where {@code iota[i] == i}) per run (a shared-prefix request at page
 * size 1: 3.3-3.8 us with runs, 8.4-8.8 with the stack). The bitmap is canonical, unlike a stack
 * of free runs, whose runs fragment with every replay: the free set alone decides what is handed
 * out, and adjacent frees merge by themselves. A summary bit per word ({@link #hasFree}) and a
 * lower bound on the first word with a free slot ({@link #firstFreeWord}) keep the search for the
 * lowest free slot short in a large, mostly full pool. Wholly free words are taken a word per
 * step without bit scans, and a release checks and clears the inner words of a run with one AND
 * and one fill. The figures are in docs/PERFORMANCE.md, "Notes moved from the engine's
 * comments".
 *
 * <p>Deterministic: an allocation takes the lowest free slots in increasing order, so the same
 * sequence of calls returns the same slots on every rank. The bits make a double free fail at
 * once instead of handing one slot to two owners.
 */
final class PageAllocator {
  private final String pool;
  private final int capacity;

  /**
   * {@code iota[i] == i}: what slot runs are written out from, and the pattern the runs of a
   * released array are matched against.
   */
  private final int[] iota;

  /** Bit {@code s & 63} of word {@code s >>> 6} is set iff slot {@code s} is allocated. */
  private final long[] used;

  /** Bit {@code w & 63} of word {@code w >>> 6} is set iff {@code used[w]} has a free slot. */
  private final long[] hasFree;

  /** No word below this one has a free slot. */
  private int firstFreeWord;

  private int free;

  /**
   * Holds per slot: copies that may still be in flight on some rank read these slots (the
   * streamed layers of a prepared backup, CACHE.md §11). Null until the first hold.
   */
  private int[] holds;

  /** Slots with at least one hold; 0 keeps {@link #release} on its fast path. */
  private int heldSlots;

  /** Bit set: slots released while held, still allocated until their last hold goes. */
  private long[] deferred;

  private int deferredCount;

  /**
   * A pool with every slot free.
   *
   * @param pool the pool's name for messages, for example {@code device}
   * @param capacity number of slots, at least 0
   */
  PageAllocator(String pool, int capacity) {
    this.pool = pool;
    this.capacity = capacity;
    this.iota = new int[capacity];
    for (int i = 0; i < capacity; i++) {
      iota[i] = i;
    }
    int words = (capacity + 63) >>> 6;
    this.used = new long[words];
    this.hasFree = new long[(words + 63) >>> 6];
    for (int w = 0; w < words; w++) {
      hasFree[w >>> 6] |= 1L << w;
    }
    if ((capacity & 63) != 0) {
      // Slots past the capacity in the last word are marked allocated forever, so that every
      // search sees them as taken and no range check is needed.
      used[words - 1] = -1L << capacity;
    }
    this.free = capacity;
  }

  int capacity() {
    return capacity;
  }

  int free() {
    return free;
  }

  /**
   * Takes the {@code n} lowest free slots into {@code dst[off..off+n)}, in increasing order. The
   * caller checks {@link #free()} first.
   *
   * @throws IllegalStateException if fewer than {@code n} slots are free
   */
  void allocate(int n, int[] dst, int off) {
    SlotRuns runs = new SlotRuns();
    allocate(n, runs);
    runs.copyTo(0, n, dst, off, this);
  }

  /**
   * Takes the {@code n} lowest free slots, in increasing order, and appends them to {@code out}
   * as runs: no slot is written one by one.
   *
   * @throws IllegalStateException if fewer than {@code n} slots are free
   */
  void allocate(int n, SlotRuns out) {
    if (n > free) {
      throw new IllegalStateException(
          pool + " allocator: requested " + n + " pages but only " + free + " are free");
    }
    if (n == 0) {
      return;
    }
    free -= n;
    int w = nextWordWithFree(firstFreeWord);
    // The pending run [runStart, runEnd) grows across words while the free slots stay
    // consecutive; it is appended when a taken slot interrupts it.
    int runStart = 0;
    int runEnd = -1;
    while (true) {
      if (used[w] == 0 && n >= 64) {
        // A stretch of wholly free words extends the run a word per step without bit scans.
        int start = w << 6;
        if (start != runEnd) {
          if (runEnd > runStart) {
            out.add(runStart, runEnd - runStart);
          }
          runStart = start;
        }
        int last = w;
        do {
          used[last] = -1L;
          hasFree[last >>> 6] &= ~(1L << last);
          last++;
          n -= 64;
        } while (n >= 64 && last < used.length && used[last] == 0);
        runEnd = last << 6;
        if (n == 0) {
          w = last - 1;
          break;
        }
        w = nextWordWithFree(last);
        continue;
      }
      long freeBits = ~used[w];
      long taken = 0;
      while (freeBits != 0 && n > 0) {
        int bit = Long.numberOfTrailingZeros(freeBits);
        // Length of the free stretch starting at bit, capped by the slots still wanted.
        int length = Math.min(Long.numberOfTrailingZeros(~(freeBits >>> bit)), 64 - bit);
        length = Math.min(length, n);
        long mask = length == 64 ? -1L : ((1L << length) - 1) << bit;
        taken |= mask;
        freeBits &= ~mask;
        int start = (w << 6) + bit;
        if (start != runEnd) {
          if (runEnd > runStart) {
            out.add(runStart, runEnd - runStart);
          }
          runStart = start;
        }
        runEnd = start + length;
        n -= length;
      }
      used[w] |= taken;
      if (used[w] == -1L) {
        hasFree[w >>> 6] &= ~(1L << w);
      }
      if (n == 0) {
        break;
      }
      w = nextWordWithFree(w + 1);
    }
    // Every word before w gave all its free slots.
    firstFreeWord = w;
    out.add(runStart, runEnd - runStart);
  }

  /** The first word at or after {@code from} with a free slot; the caller knows there is one. */
  private int nextWordWithFree(int from) {
    int s = from >>> 6;
    long bits = hasFree[s] & (-1L << from);
    while (bits == 0) {
      bits = hasFree[++s];
    }
    return (s << 6) + Long.numberOfTrailingZeros(bits);
  }

  /**
   * Returns {@code n} slots from {@code src[off..off+n)}.
   *
   * @throws IllegalStateException if a slot is out of range or not allocated (a double free)
   */
  void release(int[] src, int off, int n) {
    int end = off + n;
    int i = off;
    while (i < end) {
      int start = src[i];
      if (start < 0 || start >= capacity) {
        throw notAllocated(start);
      }
      // The longest run src[i..) = start, start+1, ...: one vectorized compare against iota.
      int max = Math.min(end - i, capacity - start);
      int m = Arrays.mismatch(src, i, i + max, iota, start, start + max);
      int length = m < 0 ? max : m;
      freeRange(start, start + length);
      i += length;
    }
  }

  /** Writes the slots {@code [start, start + length)} to {@code dst[off..)}: one copy of iota. */
  void writeRun(int start, int length, int[] dst, int off) {
    System.arraycopy(iota, start, dst, off, length);
  }

  /**
   * Returns the run of slots {@code [start, start + length)}, {@code length >= 1}: its bits are
   * checked and cleared a word at a time.
   *
   * @throws IllegalStateException if a slot is out of range or not allocated (a double free)
   */
  void releaseRun(int start, int length) {
    if (start < 0 || start > capacity - length) {
      throw notAllocated(start < 0 || start >= capacity ? start : capacity);
    }
    freeRange(start, start + length);
  }

  /** Frees {@code [from, to)}; a held slot only becomes free once its last hold goes. */
  private void freeRange(int from, int to) {
    if (heldSlots == 0) {
      clearBits(from, to);
      free += to - from;
      return;
    }
    for (int s = from; s < to; s++) {
      if (!isAllocated(s) || isDeferred(s)) {
        throw notAllocated(s);
      }
    }
    for (int s = from; s < to; s++) {
      if (holds[s] > 0) {
        deferred[s >>> 6] |= 1L << s;
        deferredCount++;
      } else {
        clearBits(s, s + 1);
        free++;
      }
    }
  }

  // ---------------------------------------------------------------- holds of copy sources

  /**
   * Holds allocated slots that copies in flight read: a release of a held slot is deferred until
   * {@link #unhold} takes its last hold, so that no later owner can write the slot while some
   * rank's copy still reads it (TransferHandle's contract). Holds are taken and dropped at
   * replicated points only, so the free set stays the same on every rank.
   *
   * @throws IllegalStateException if a slot is not allocated
   */
  void hold(int[] slots) {
    if (holds == null) {
      holds = new int[capacity];
      deferred = new long[used.length];
    }
    for (int s : slots) {
      if (s < 0 || s >= capacity || !isAllocated(s) || isDeferred(s)) {
        throw notAllocated(s);
      }
    }
    for (int s : slots) {
      if (holds[s]++ == 0) {
        heldSlots++;
      }
    }
  }

  /** Drops one hold of each slot; a slot released meanwhile is freed with its last hold. */
  void unhold(int[] slots) {
    for (int s : slots) {
      if (holds == null || s < 0 || s >= capacity || holds[s] == 0) {
        throw new IllegalStateException(
            pool + " slot " + s + " unheld but not held: this is an engine bug, please report it");
      }
    }
    for (int s : slots) {
      if (--holds[s] == 0) {
        heldSlots--;
        if (isDeferred(s)) {
          deferred[s >>> 6] &= ~(1L << s);
          deferredCount--;
          clearBits(s, s + 1);
          free++;
        }
      }
    }
  }

  /** Slots released while held: allocated, owned by no one, freed with their last hold. */
  int deferred() {
    return deferredCount;
  }

  /** Whether a slot was released while held and waits for its last hold to go. */
  boolean isDeferred(int slot) {
    return deferred != null && (deferred[slot >>> 6] & (1L << slot)) != 0;
  }

  /** Holds on a slot, for the invariant checker. */
  int holds(int slot) {
    return holds == null ? 0 : holds[slot];
  }

  /** Marks {@code [from, to)} free, failing on the first of them that is not allocated. */
  private void clearBits(int from, int to) {
    int first = from >>> 6;
    int last = (to - 1) >>> 6;
    long firstMask = -1L << from;
    long lastMask = -1L >>> -to;
    if (first == last) {
      long mask = firstMask & lastMask;
      checkAllocated(first, mask);
      used[first] &= ~mask;
      hasFree[first >>> 6] |= 1L << first;
    } else {
      checkAllocated(first, firstMask);
      // The inner words must be wholly allocated: one AND over them, searched only on failure.
      long inner = -1L;
      for (int w = first + 1; w < last; w++) {
        inner &= used[w];
      }
      if (inner != -1L) {
        for (int w = first + 1; w < last; w++) {
          checkAllocated(w, -1L);
        }
      }
      checkAllocated(last, lastMask);
      // Cleared only after every check, so a failed release leaves the bits as they were.
      used[first] &= ~firstMask;
      Arrays.fill(used, first + 1, last, 0L);
      used[last] &= ~lastMask;
      markHasFree(first, last);
    }
    if (first < firstFreeWord) {
      firstFreeWord = first;
    }
  }

  /** Sets the summary bits of words {@code first..last}, a summary word at a time. */
  private void markHasFree(int first, int last) {
    int s = first >>> 6;
    int end = last >>> 6;
    long mask = -1L << first;
    while (s < end) {
      hasFree[s++] |= mask;
      mask = -1L;
    }
    hasFree[s] |= mask & (-1L >>> (63 - (last & 63)));
  }

  private void checkAllocated(int word, long mask) {
    long missing = ~used[word] & mask;
    if (missing != 0) {
      throw notAllocated((word << 6) + Long.numberOfTrailingZeros(missing));
    }
  }

  private IllegalStateException notAllocated(int slot) {
    return new IllegalStateException(
        pool
            + " slot "
            + slot
            + " released but not allocated (double free or foreign slot;"
            + " capacity="
            + capacity
            + "): this is an engine bug, please report it");
  }

  boolean isAllocated(int slot) {
    return (used[slot >>> 6] & (1L << slot)) != 0;
  }

  /** The free slots in increasing order, for the invariant checker. */
  int[] freeSlots() {
    int[] out = new int[free];
    int k = 0;
    for (int w = 0; w < used.length; w++) {
      for (long bits = ~used[w]; bits != 0; bits &= bits - 1) {
        out[k++] = (w << 6) + Long.numberOfTrailingZeros(bits);
      }
    }
    return out;
  }
}
