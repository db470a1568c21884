package io.kvtier.core.cache;

/**
 * One L3 prefetch, replicated: every field changes only at a replicated point (its start at
 * admission, the agreed steps of the sync, an abort). The rank-local probe and fetch live in
 * {@link L3Progress}, keyed by {@link #sequence}.
 *
 * <pre>
 *   PROBING   the store is asked how many candidate pages it has; agreed with MIN
 *   FETCHING  host slots reserved for the agreed pages; pages fetched into them
 *   DRAINING  decided (or aborted) while some rank's fetch may still write the rest of the
 *             slots: they are freed once every rank reports its fetch finished
 *   DONE      the agreed pages are host-only tree nodes; waits for its request's admission
 * </pre>
 */
final class Prefetch {
  enum State {
    PROBING,
    FETCHING,
    DRAINING,
    DONE
  }

  final long sequence;
  final long requestId;
  final long namespace;
  final int[] tokens;

  /** Tokens from the root where the candidate pages begin: the anchor's depth. */
  final int startToken;

  final int candidatePages;

  /** Chained page hashes of the candidate pages (replicated; salted per rank for the keys). */
  final byte[][] pageHashes;

  State state = State.PROBING;

  /** The lock this op holds: the anchor until decided, then the deepest inserted node; or null. */
  RadixNode lockNode;

  int[] hostSlots;
  int reservedPages;

  /** Slots {@code [heldFrom, reservedPages)} are still reserved by this op. */
  int heldFrom;

  /** Tokens inserted from {@link #startToken} once DONE. */
  int insertedTokens;

  Prefetch(
      long sequence,
      long requestId,
      long namespace,
      int[] tokens,
      int startToken,
      int candidatePages,
      byte[][] pageHashes,
      RadixNode anchor) {
    this.sequence = sequence;
    this.requestId = requestId;
    this.namespace = namespace;
    this.tokens = tokens;
    this.startToken = startToken;
    this.candidatePages = candidatePages;
    this.pageHashes = pageHashes;
    this.lockNode = anchor;
  }

  int heldPages() {
    return hostSlots == null ? 0 : reservedPages - heldFrom;
  }

  @Override
  public String toString() {
    return "Prefetch[seq="
        + sequence
        + ", request="
        + requestId
        + ", "
        + state
        + ", start="
        + startToken
        + ", candidates="
        + candidatePages
        + ", reserved="
        + reservedPages
        + ", held="
        + heldPages()
        + "]";
  }
}
