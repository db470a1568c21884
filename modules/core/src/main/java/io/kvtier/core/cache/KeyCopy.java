package io.kvtier.core.cache;

/**
 * A request's tokens past its match, copied into the tree's key store at admission while they
 * are checked, for its insert to take as the new leaf's key instead of copying them again.
 *
 * <p>Why: a request's unmatched tokens are read from memory no cache holds twice otherwise, once
 * by the admission's check and once by the insert's copy, and the copy's destination is cold as
 * well. Copying them at admission reads them once (the check then reads the copy from L1) and
 * overlaps the read with the write. Shared-prefix replay at page size 64 and 65,536 tokens, JMH
 * median per request over three runs each: 946 to 853 ns (docs/PERFORMANCE.md). The insert
 * takes the copy only for the admitted array (the same array object, a range inside the copy):
 * a finish over another array (prompt and output, say) copies its key as before, and the
 * admission's copy is released when the request ends. So the tree keeps the tokens as they were
 * at admission.
 *
 * <p>Ints only, no references: its holders (a request's state, the tree) live long, and under G1
 * a reference stored into an old object costs a fence (a few percent of this path at most; not
 * measurable on its own in the replay).
 */
final class KeyCopy {
  /** The store chunk the copy is in; -1 when there is no copy. */
  int chunk = -1;

  /** Where in the chunk the copy starts. */
  int offset;

  /** The copied range of the request's admitted tokens: {@code [from, end)}. */
  int from;

  int end;

  /** Whether tokens {@code [pos, to)} of the admitted array are a part of the copy. */
  boolean covers(int pos, int to) {
    return chunk >= 0 && pos >= from && to <= end;
  }

  /** Takes another copy's fields and leaves the other empty. */
  void takeFrom(KeyCopy other) {
    set(other);
    other.chunk = -1;
  }

  /** Refers to the same copy as another (which keeps it). */
  void set(KeyCopy other) {
    chunk = other.chunk;
    offset = other.offset;
    from = other.from;
    end = other.end;
  }
}
