package io.kvtier.core.cache;

/**
 * Checks a {@link RankCache} against the invariants of CACHE.md §1 after any operation: I1
 * device residency is prefix-closed, I2 evicted implies backed up, I3 host backups are
 * prefix-closed, I4 lengths are page multiples and slots match keys, I5 per-pool accounting with
 * no slot owned twice and nothing leaked; plus the tree's own bookkeeping (parent links, child
 * maps, lock counts, ack membership, eviction-heap entries of every candidate), the host slots
 * held by prepared backups and retirement acks, and the pairing of the rank-local copy groups
 * with the replicated queues.
 *
 * <p>{@link #check} costs time linear in the tree, the requests and the pools: for tests, the
 * simulator and debug runs, not for the request path. {@link #checkChanged} costs what changed
 * since it last ran: the nodes marked in {@link ChangedNodes} with their parents' and their own
 * child maps, the requests and the queues; the simulator runs it after every tick and {@link
 * #check} every {@code fullCheckInterval} ticks and at the end (docs/CACHE.md §8).
 *
 * <p>One family of rules per class, after Lucene's {@code CheckIndex} (per-part checks, one walk
 * that fills a tally, each part returning its own status): {@link QueueMembership} (who is in
 * which queued operation), {@link TreeInvariants} (the full walk) or {@link ChangedInvariants}
 * (the marked nodes) with {@link NodeInvariants} and {@link SnapshotInvariants} for each node,
 * {@link RequestInvariants}, {@link QueueInvariants}, then {@link PoolInvariants}, the one pool
 * check, on the {@link SlotTally} and the families' statuses; {@link IdleInvariants} for {@link
 * #checkIdle}. {@link KeptSums} carries the pool sums from one full check to the next.
 */
public final class CacheInvariants {
  private CacheInvariants() {}

  /**
   * Checks every invariant.
   *
   * @param cache the cache, between two operations
   * @throws CacheInvariantException naming the first violation found
   */
  public static void check(RankCache cache) {
    full(cache);
  }

  /**
   * Checks the invariants on what changed since the last {@link #check} or {@code checkChanged}
   * of this cache: every node marked in {@link ChangedNodes} (and its parent) against the rules
   * of a node, its parent and its children (links, I1 to I4, backup and queue membership, lock
   * counts, heap entry of a candidate, slots allocated); every request, explicit lock and queue;
   * and the pool accounting against sums over the tree kept from the last full check and updated
   * by the marked nodes. What it leaves to {@link #check}: a slot owned twice (by two nodes, or a
   * node and a request), the allocators' free lists and the key store's views, and a change that
   * no room marked. The first call runs {@link #check} and starts the marks.
   *
   * @param cache the cache, between two operations
   * @throws CacheInvariantException naming the first violation found
   */
  public static void checkChanged(RankCache cache) {
    ChangedNodes changed = cache.rooms().tree().changed;
    if (!changed.checkTracking()) {
      check(cache);
      return;
    }
    InvariantRun run = new InvariantRun(cache, false);
    PageSums pages = ChangedInvariants.check(run);
    RequestInvariants.Status requests = RequestInvariants.check(run);
    QueueInvariants.Status queues = QueueInvariants.check(run, requests);
    PoolInvariants.check(run, pages, requests, queues);
    changed.clearCheck();
  }

  /**
   * Checks every invariant and that the cache is idle with nothing leaked: no active request, no
   * lock, no pending backup or load, every device page either free or evictable from the tree.
   *
   * @param cache the cache, after every request ended and every operation was committed
   * @throws CacheInvariantException naming the first violation found
   */
  public static void checkIdle(RankCache cache) {
    Full full = full(cache);
    IdleInvariants.check(full.run, full.tree.pages(), full.requests, full.queues);
  }

  /** The statuses of a full check's families. */
  private record Full(
      InvariantRun run,
      TreeInvariants.Status tree,
      RequestInvariants.Status requests,
      QueueInvariants.Status queues) {}

  /**
   * The full check: the queue memberships (collected by the run), the tree walk, the requests,
   * the queues and the pools in this order, each family returning what it found for the pool
   * check; then the replica digest's node terms, and the sums the incremental check starts from.
   */
  private static Full full(RankCache cache) {
    InvariantRun run = new InvariantRun(cache, true);
    TreeInvariants.Status tree = TreeInvariants.check(run);
    RequestInvariants.Status requests = RequestInvariants.check(run);
    QueueInvariants.Status queues = QueueInvariants.check(run, requests);
    PoolInvariants.check(run, tree.pages(), requests, queues);
    ReplicaDigest.verifyNodeTerms(cache);
    KeptSums.restart(run);
    return new Full(run, tree, requests, queues);
  }
}
