package io.kvtier.core.cache;

import java.util.IdentityHashMap;
import java.util.Map;

/**
 * One run of {@link CacheInvariants}: the rooms it reads, the nodes it saw and the slot tally
 * its family checks fill (after Lucene's {@code CheckIndex}: one walk fills a tally, each part's
 * check returns its own status, and the pool check compares the sums with the ledger once).
 *
 * <p>A full run sees every node of the tree; an incremental one ({@link ChangedInvariants}) sees
 * the marked nodes and their parents, and decides membership of the tree by following links.
 */
final class InvariantRun {
  final RankCache cache;
  final CacheTree tree;
  final PoolLedger ledger;
  final Backups backups;
  final LoadBacks loadBacks;

  /** The replicated L3 controller, or null without an L3 tier. */
  final L3Tier l3;

  final int pageSize;
  final int snapshotSlots;

  /** Whether this is a full check; else only the changed nodes are looked at. */
  final boolean full;

  /** The nodes this run looked at (the full walk: all of the tree). */
  final Map<RadixNode, Boolean> seen = new IdentityHashMap<>();

  /** Who owns which pool slot and key store chunk, as far as this run counted. */
  final SlotTally slots;

  /** Which node is in which queued operation, and the locks held on each. */
  final QueueMembership membership;

  InvariantRun(RankCache cache, boolean full) {
    this.cache = cache;
    this.full = full;
    this.tree = cache.rooms().tree();
    this.ledger = cache.rooms().ledger();
    this.backups = cache.rooms().backups();
    this.loadBacks = cache.rooms().loadBacks();
    this.l3 = cache.rooms().l3().map(L3Room::tier).orElse(null);
    this.pageSize = tree.pageSize;
    this.snapshotSlots = cache.config().snapshotSlots();
    this.slots = new SlotTally(ledger, tree.keys, full);
    this.membership = QueueMembership.collect(this);
  }

  static void fail(String message) {
    throw new CacheInvariantException(message);
  }

  /**
   * Whether {@code n} is in the tree: seen by the full walk, or for the incremental check,
   * linked from a live root through live parents that list it.
   */
  boolean inTree(RadixNode n) {
    if (full) {
      return seen.containsKey(n);
    }
    for (RadixNode c = n; ; c = c.parent) {
      if (c.deleted) {
        return false;
      }
      RadixNode p = c.parent;
      if (p == null) {
        return tree.roots.get(c.namespace) == c;
      }
      if (c.keyTokens == null || tree.findChild(p, c.keyTokens, c.keyOffset) != c) {
        return false;
      }
    }
  }
}
