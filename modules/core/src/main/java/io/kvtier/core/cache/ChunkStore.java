package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * Int runs (the keys of tree nodes) copied into shared 64 KiB chunks instead of arrays of their
 * own.
 *
 * <p>Why: with a full pool every missed request deletes an old leaf and makes a new one, and a
 * fresh array for the new leaf's key writes memory that no cache holds (about 1 us per 8.7 KB,
 * against 0.15 us to copy into memory the cache released a moment ago). A chunk is handed out by
 * bumping an offset and is reused once no live node views it; LRU deletes old nodes first, so the
 * chunks of old runs empty first. Reusing the arrays of deleted leaves whole would not do: new
 * multiturn keys are longer than the leaves that go. The figures are in docs/PERFORMANCE.md.
 *
 * <p>Each node records the chunk of each run it views (-1 for an array of its own); a chunk
 * counts the live views: one per run stored (a request's admission copy, {@link KeyCopy}, is one
 * too), one more per split (both halves view it) and per node that takes a part of a request's
 * copy, one less per run released. A run longer than a quarter chunk gets an array of its own,
 * and so does every run while the chunks hold more than four times the ints of the runs that
 * live in them (a few long-lived runs can pin many chunks), which bounds the memory the chunks
 * take.
 */
final class ChunkStore {
  static final int CHUNK = 1 << 14;
  private static final int MAX_IN_CHUNK = CHUNK / 4;
  private int[][] chunks = new int[4][];
  private int[] views = new int[4];
  private int chunkCount;

  /** Chunks no live node views, most recently emptied last (warmest in the caches). */
  private int[] empty = new int[4];

  private int emptyCount;

  /** The chunk new runs go to, and how much of it is used; -1 before the first run. */
  private int current = -1;

  private int used;

  /** Ints of the runs in chunks that live nodes view (split halves counted once). */
  private long liveInts;

  /** Where the last {@link #store} put its run: {@code array[offset..offset+length)}. */
  int[] array;

  int offset;

  /**
   * Copies {@code src[pos, pos+length)} into the store; {@link #array} and {@link #offset} say
   * where.
   *
   * @return the chunk the run went to, or -1 for an array of its own
   */
  int store(int[] src, int pos, int length) {
    if (length > MAX_IN_CHUNK || !roomFor(length)) {
      array = Arrays.copyOfRange(src, pos, pos + length);
      offset = 0;
      return -1;
    }
    if (current < 0 || used + length > CHUNK) {
      nextChunk();
    }
    int[] chunk = chunks[current];
    System.arraycopy(src, pos, chunk, used, length);
    array = chunk;
    offset = used;
    views[current]++;
    used += length;
    liveInts += length;
    return current;
  }

  /** Whether {@link #store} would put a run of {@code length} ints in a chunk. */
  boolean wouldChunk(int length) {
    return length <= MAX_IN_CHUNK && roomFor(length);
  }

  /** Whether a run may go to a chunk, or the chunks hold too much dead space already. */
  private boolean roomFor(int length) {
    if ((current >= 0 && used + length <= CHUNK) || emptyCount > 0) {
      return true;
    }
    return (long) (chunkCount + 1) * CHUNK <= 4 * (liveInts + length) + 4L * CHUNK;
  }

  private void nextChunk() {
    if (current >= 0 && views[current] == 0) {
      pushEmpty(current);
    }
    if (emptyCount > 0) {
      current = empty[--emptyCount];
    } else {
      if (chunkCount == chunks.length) {
        chunks = Arrays.copyOf(chunks, chunkCount * 2);
        views = Arrays.copyOf(views, chunkCount * 2);
        empty = Arrays.copyOf(empty, chunkCount * 2);
      }
      chunks[chunkCount] = new int[CHUNK];
      current = chunkCount++;
    }
    used = 0;
  }

  /**
   * A node views {@code length} ints of a run stored before (a part of a request's {@link
   * KeyCopy}); released like a stored run.
   */
  void addView(int chunk, int length) {
    if (chunk >= 0) {
      views[chunk]++;
      liveInts += length;
    }
  }

  /** A split made a second node that views a run of {@code chunk} (-1: none). */
  void shareView(int chunk) {
    if (chunk >= 0) {
      views[chunk]++;
    }
  }

  /**
   * A node's view of {@code length} ints of {@code chunk} (-1: none) ended; a chunk nobody views
   * is reused. The node must not read its run again.
   */
  void release(int chunk, int length) {
    if (chunk >= 0) {
      liveInts -= length;
      if (--views[chunk] == 0) {
        if (chunk == current) {
          used = 0;
        } else {
          pushEmpty(chunk);
        }
      }
    }
  }

  /** The array of a chunk. */
  int[] chunk(int chunk) {
    return chunks[chunk];
  }

  /** The number of chunks made so far (for the invariant checker). */
  int chunkCount() {
    return chunkCount;
  }

  /** The live views of a chunk (for the invariant checker). */
  int views(int chunk) {
    return views[chunk];
  }

  /** Ints of the runs live views hold in chunks (for the invariant checker). */
  long liveInts() {
    return liveInts;
  }

  private void pushEmpty(int c) {
    empty[emptyCount++] = c;
  }
}
