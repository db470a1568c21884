package io.kvtier.core.cache;

/**
 * What the cache holds for one active request: the lock on its matched prefix and the device
 * pages it allocated for the tokens after that prefix. States of ended requests are reused
 * ({@link Pool}), so nothing may keep one once its request has ended.
 */
final class RequestState {
  long id;
  long namespace;
  int priority;

  /**
   * The admitted tokens, {@code tokens[0, length)}; replaced by the array given to a chunk insert.
   * Not copied: the caller handed the array over (see {@link RankCache#admit(long, int[], int,
   * RequestOptions)}), and a finish or chunk insert of this same array skips the comparison with
   * it (the fast path).
   */
  int[] tokens;

  /** How many of {@link #tokens} the request was admitted (or last chunk-inserted) with. */
  int length;

  /**
   * Tokens {@code [0, checkedLength)} of {@link #tokens} were checked against the vocabulary; a
   * finish or chunk insert of the same array that uses more checks only the ones past it.
   */
  int checkedLength;

  /** The deepest locked node; the prefix up to it is the tree's, the rest the request's. */
  RadixNode lockNode;

  int prefixLength;

  /**
   * The tokens the tree matched at admission (device prefix and host hit), at least {@link
   * #prefixLength}: past the prefix the request recomputes pages the tree holds (a host hit not
   * loaded back, or a match past the deepest recurrent-state snapshot), whose copies in the
   * request's pages are duplicates at its insert.
   */
  int matchedLength;

  /**
   * The request's own device pages: page {@code i} holds tokens {@code [prefixLength +
   * i*pageSize, ...)}. Held as runs, so that allocating them writes no slot one by one and the
   * tree takes them as runs too (see {@link SlotRuns}).
   */
  final SlotRuns own = new SlotRuns();

  /** The request's prepared backup over the first {@code pages} own pages, or null. */
  PreparedBackup prepared;

  /**
   * The first-page key of {@link #tokens} at {@code missKeyPos} that the admission's walk
   * computed where it found no child (-1: none; see {@link TreeWalk#missKey}).
   */
  long missKey;

  int missKeyPos = -1;

  /**
   * The admission's copy of {@link #tokens} past the match, which the insert takes as the new
   * leaf's key; released (by the cache, which owns the store) when the request ends.
   */
  final KeyCopy keyCopy = new KeyCopy();

  /**
   * Recurrent-state snapshots (HYBRID.md §5), only with {@code kvtier.snapshot-slots > 0}: the
   * interval positions the request holds slots for, ascending, {@code snapshotCount} of them,
   * and their device slots; the next interval position not yet allocated; the tail's slots (or
   * null); the device slots of the snapshot the request resumes from (the locked node's at
   * admission; empty for none), passed to the runner on its first step only.
   */
  int[] snapshotPositions = NO_SLOTS;

  int[][] snapshotSlots = NO_SETS;
  int snapshotCount;
  int nextSnapshot;
  int[] tailSlots;
  int[] resumeSlots = NO_SLOTS;

  static final int[] NO_SLOTS = new int[0];
  static final int[][] NO_SETS = new int[0][];

  private RequestState() {}

  /** The device slots this request holds for snapshots, not yet the tree's. */
  int snapshotSlotsHeld() {
    int n = tailSlots == null ? 0 : tailSlots.length;
    for (int i = 0; i < snapshotCount; i++) {
      if (snapshotSlots[i] != null) {
        n += snapshotSlots[i].length;
      }
    }
    return n;
  }

  void clearSnapshots() {
    snapshotPositions = NO_SLOTS;
    snapshotSlots = NO_SETS;
    snapshotCount = 0;
    nextSnapshot = 0;
    tailSlots = null;
    resumeSlots = NO_SLOTS;
  }

  /** The number of own pages. */
  int ownCount() {
    return own.pages();
  }

  /**
   * The states of ended requests, handed to new ones. Why: a state is three objects (the state,
   * its page list and the list's array: 146 of the 504 bytes a replayed shared-prefix request
   * allocated) that the collector would supply from memory no cache holds, while the state of
   * the request before is warm (about 5% of a shared-prefix request; docs/PERFORMANCE.md).
   */
  static final class Pool {
    /** Enough for a scheduler's batch; states beyond it are left to the collector. */
    private static final int KEPT = 64;

    private final RequestState[] spare = new RequestState[KEPT];
    private int count;

    /** A state for a request admitted with these arguments, with no pages and no backup. */
    RequestState take(
        long id,
        long namespace,
        int priority,
        int[] tokens,
        int length,
        RadixNode lockNode,
        int prefixLength) {
      RequestState r;
      if (count == 0) {
        r = new RequestState();
      } else {
        r = spare[--count];
        spare[count] = null;
      }
      r.id = id;
      r.namespace = namespace;
      r.priority = priority;
      r.tokens = tokens;
      r.length = length;
      r.checkedLength = length;
      r.lockNode = lockNode;
      r.prefixLength = prefixLength;
      r.matchedLength = prefixLength;
      return r;
    }

    /** Takes back the state of a request that ended; nothing may use it again. */
    void give(RequestState r) {
      if (count < KEPT) {
        r.tokens = null;
        r.lockNode = null;
        r.prepared = null;
        r.missKeyPos = -1;
        r.own.clear();
        r.clearSnapshots();
        spare[count++] = r;
      }
    }
  }
}
