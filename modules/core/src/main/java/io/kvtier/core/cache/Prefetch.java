package io.kvtier.core.cache;

/**
 * One L3 prefetch, replicated: every field changes only at a replicated point (its start at
 * admission, the agreed steps of the sync, an abort). The rank-local probe and fetch live in
 * {@link L3Progress}, keyed by {@link #sequence}.
 *
 * <pre>
 *   PROBING   the store is asked how many candidate pages it has; agreed with MIN. With
 *             snapshots: the deepest candidate end whose pages and snapshot it has, asked
 *             again below the MIN until every rank names the same end
 *   FETCHING  host slots reserved for the agreed pages (and the snapshot, after them); pages
 *             fetched into them, then the snapshot
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

  /** Page slots of one snapshot ({@code kvtier.snapshot-slots}); 0 = pages only. */
  final int snapshotSlots;

  /**
   * A transfer's decode side ({@link RankCache#startPrefetch(long, int[], int, RequestOptions,
   * boolean)}): no threshold, and the timeout policy whatever the configured one.
   */
  boolean awaitTransfer;

  /** The candidate pages, whose hashes the probe computes and the inserted nodes take. */
  final CandidatePages candidates;

  /** With snapshots: the deepest candidate end (in pages) the current probe may name. */
  int probeBound;

  /** Pages being fetched (the agreed usable end); {@link #reservedPages} adds the snapshot. */
  int fetchPages;

  State state = State.PROBING;

  /** The lock this op holds: the anchor until decided, then the deepest inserted node; or null. */
  RadixNode lockNode;

  int[] hostSlots;
  int reservedPages;

  /**
   * Slots {@code [heldFrom, reservedPages)} are still reserved by this op; the snapshot's
   * slots, if any, are the last {@link #snapshotSlots} of {@link #hostSlots}.
   */
  int heldFrom;

  /** Tokens inserted from {@link #startToken} once DONE. */
  int insertedTokens;

  Prefetch(
      long sequence,
      long requestId,
      long namespace,
      CandidatePages candidates,
      int snapshotSlots,
      RadixNode anchor) {
    this.sequence = sequence;
    this.requestId = requestId;
    this.namespace = namespace;
    this.candidates = candidates;
    this.tokens = candidates.tokens();
    this.startToken = candidates.from();
    this.candidatePages = candidates.pages();
    this.snapshotSlots = snapshotSlots;
    this.probeBound = candidatePages;
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
