package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import java.util.List;

/**
 * A request's recurrent-state snapshots as the request table meets them (HYBRID.md §5): where an
 * admitted request resumes, the device slots its pages' snapshots take, the snapshots a step
 * takes, its insert (in segments that end at its snapshot positions, each taken by the node
 * ending there) and their end. {@link NoSnapshots} without snapshots ({@code
 * kvtier.snapshot-slots} 0): a request resumes where it matched, its pages take nothing more, and
 * they go into the tree in one insert. Only replicated state decides, as everywhere in the table.
 */
interface SnapshotPort {
  /** The port for a cache's settings: {@link NoSnapshots} unless it has snapshot slots. */
  static SnapshotPort of(
      CacheConfig config,
      CacheTree tree,
      TreeInsert inserts,
      PoolLedger ledger,
      Backups backups,
      PreparedBackups prepared,
      WriteTriggers triggers,
      RuleVariants rules,
      SnapshotRule rule) {
    if (config.snapshotSlots() == 0) {
      return new NoSnapshots(inserts, prepared, triggers);
    }
    return new RequestSnapshots(
        tree,
        inserts,
        ledger,
        backups,
        prepared,
        triggers,
        rules,
        config.pageSize(),
        config.snapshotSlots(),
        rule);
  }

  /** The node an admission loads back to: the host hit's end, or its deepest host snapshot. */
  RadixNode loadBackTarget(PrefixMatcher.Scan scan);

  /**
   * The node the admitted request resumes from, given the one it locked and the tokens it loads
   * back: that node, or (moving the lock) the deepest device snapshot at or above it.
   */
  RadixNode resumeNode(PrefixMatcher.Scan scan, RadixNode root, RadixNode locked, int loaded);

  /** The usable length of a match of {@code matched} tokens that resumes at {@code locked}. */
  int usableLength(int matched, RadixNode locked);

  /** The admitted request's snapshot state: its next interval position and its resume slots. */
  void admitted(RequestState r, RadixNode locked);

  /** The device slots the snapshots inside {@code pages} more pages take, all or nothing. */
  int slotsFor(RequestState r, int pages);

  /** Takes {@code slots} (as {@link #slotsFor} said, evicted for) once the pages are allocated. */
  void allocate(RequestState r, int slots);

  /** The snapshots a step over {@code (from, to]} takes, in position order. */
  List<SnapshotTarget> stepSnapshots(RequestState r, int from, int to);

  /**
   * Inserts the request's pages up to {@code aligned} below its locked node, resolving its
   * prepared backup if it has one; {@code out} says where the insert ended.
   *
   * @return the length that was cached on the device before
   */
  int insert(RequestState r, int[] tokens, int aligned, int keyPos, KeyCopy copy, InsertResult out);

  /** After a chunk insert that ended at {@code end}: frees what it passed, renews the tail. */
  void chunkInserted(RequestState r, int end);

  /** The request ends: frees every snapshot slot it still holds. */
  void release(RequestState r);
}
