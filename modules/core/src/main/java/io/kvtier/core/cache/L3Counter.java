package io.kvtier.core.cache;

/**
 * The replicated counters of a cache's L3 tier ({@link L3Stats}): each changes only at points
 * every rank reaches in the same order (registration, the agreed commits and decisions, aborts).
 * Adding a counter is adding a constant (at the end; the first ones are in the replica digest in
 * this order).
 */
public enum L3Counter {
  /** L3 writes queued (each covers a chain of host-committed nodes). */
  WRITES_REGISTERED(true),
  /** L3 writes every rank finished. */
  WRITES_COMMITTED(true),
  /** L3 writes that failed on some rank: the nodes are not marked stored. */
  WRITES_FAILED(true),
  /** Pages of committed L3 writes. */
  PAGES_WRITTEN(true),
  /** Prefetches started at admission (their probe ran). */
  PREFETCHES_STARTED(true),
  /** Prefetches ended after the probe: the agreed hit was below the threshold or no host room. */
  PREFETCHES_SKIPPED(true),
  /** Prefetches decided because some rank gave up (timeout). */
  PREFETCHES_TIMED_OUT(true),
  /** Prefetches whose request was aborted first. */
  PREFETCHES_ABORTED(true),
  /** Prefetches that reached their decision and inserted their pages. */
  PREFETCHES_DONE(true),
  /** Host pages reserved for fetching (the agreed hit). */
  PAGES_RESERVED(true),
  /** Pages that became host-only tree nodes. */
  PAGES_INSERTED(true),
  /** Fetched pages the tree already held when they were inserted. */
  PAGES_DUPLICATE(true),
  /**
   * Reserved pages not taken: not fetched on some rank by the decision (slow, failed, corrupt or
   * evicted from a shard), or aborted.
   */
  PAGES_MISSED(true),
  /** Recurrent-state snapshots of committed L3 writes (HYBRID.md §6). */
  SNAPSHOTS_WRITTEN(false),
  /** Snapshots fetched by a prefetch that became a host-only node's host snapshot. */
  SNAPSHOTS_INSERTED(false),
  /**
   * Pages every rank found in the store that a prefetch did not fetch because the host pool had
   * no room for them: evicting host leaves could not free enough slots, as when the host tier
   * holds only copies of pages still on the device (a host tier no larger than the device pool
   * under write-through).
   */
  PAGES_NO_HOST_ROOM(false);

  private static final L3Counter[] ALL = values();

  private final boolean inReplicaDigest;
  private final String key = Counts.key(this);

  L3Counter(boolean inReplicaDigest) {
    this.inReplicaDigest = inReplicaDigest;
  }

  /**
   * The counter's name in JSON, tables and metrics: the constant in lower camel case.
   *
   * @return for example {@code pagesWritten}
   */
  public String key() {
    return key;
  }

  /**
   * Whether the replica digest covers it (the counters that existed before snapshots did).
   *
   * @return true for the digested ones
   */
  public boolean inReplicaDigest() {
    return inReplicaDigest;
  }

  static L3Counter[] all() {
    return ALL;
  }
}
