package io.kvtier.core.cache;

import java.util.List;

/**
 * The {@link SnapshotPort} of a cache without recurrent-state snapshots: a request resumes where
 * it matched, its pages take no other slots, and they go into the tree in one insert.
 */
final class NoSnapshots implements SnapshotPort {
  private final TreeInsert inserts;
  private final PreparedBackups prepared;
  private final WriteTriggers triggers;

  NoSnapshots(TreeInsert inserts, PreparedBackups prepared, WriteTriggers triggers) {
    this.inserts = inserts;
    this.prepared = prepared;
    this.triggers = triggers;
  }

  @Override
  public RadixNode loadBackTarget(PrefixMatcher.Scan scan) {
    return scan.lastHost;
  }

  @Override
  public RadixNode resumeNode(
      PrefixMatcher.Scan scan, RadixNode root, RadixNode locked, int loaded) {
    return locked;
  }

  @Override
  public int usableLength(int matched, RadixNode locked) {
    return matched;
  }

  @Override
  public void admitted(RequestState r, RadixNode locked) {}

  @Override
  public int slotsFor(RequestState r, int pages) {
    return 0;
  }

  @Override
  public void allocate(RequestState r, int slots) {}

  @Override
  public List<SnapshotTarget> stepSnapshots(RequestState r, int from, int to) {
    return List.of();
  }

  @Override
  public int insert(
      RequestState r, int[] tokens, int aligned, int keyPos, KeyCopy copy, InsertResult out) {
    if (r.prepared != null) {
      return prepared.insert(r, tokens, aligned, r.missKey, keyPos, copy, out);
    }
    return inserts.insert(
        r.lockNode,
        tokens,
        r.prefixLength,
        aligned,
        r.own,
        0,
        r.priority,
        r.missKey,
        keyPos,
        copy,
        triggers,
        out);
  }

  @Override
  public void chunkInserted(RequestState r, int end) {}

  @Override
  public void release(RequestState r) {}
}
