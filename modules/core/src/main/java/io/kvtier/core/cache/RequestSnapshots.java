package io.kvtier.core.cache;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The {@link SnapshotPort} of a cache with recurrent-state snapshots (HYBRID.md §5, {@code
 * kvtier.snapshot-slots > 0}): a request resumes at the deepest snapshot of its match and loads
 * back only as far as a committed host snapshot; its pages take the slots of the interval
 * snapshots inside them and of a tail, all or nothing; a step takes the snapshots in its range;
 * the insert goes in segments that end at the request's snapshot positions, where the node
 * ending there takes the snapshot or it is freed.
 */
final class RequestSnapshots implements SnapshotPort {
  private final CacheTree tree;
  private final TreeInsert inserts;
  private final PoolLedger ledger;
  private final Backups backups;
  private final PreparedBackups prepared;
  private final WriteTriggers triggers;
  private final RuleVariants rules;
  private final int pageSize;

  /** Page slots per snapshot, at least 1. */
  private final int snapshotSlots;

  private final SnapshotRule snapshotRule;

  RequestSnapshots(
      CacheTree tree,
      TreeInsert inserts,
      PoolLedger ledger,
      Backups backups,
      PreparedBackups prepared,
      WriteTriggers triggers,
      RuleVariants rules,
      int pageSize,
      int snapshotSlots,
      SnapshotRule snapshotRule) {
    this.tree = tree;
    this.inserts = inserts;
    this.ledger = ledger;
    this.backups = backups;
    this.prepared = prepared;
    this.triggers = triggers;
    this.rules = rules;
    this.pageSize = pageSize;
    this.snapshotSlots = snapshotSlots;
    this.snapshotRule = snapshotRule;
  }

  @Override
  public RadixNode loadBackTarget(PrefixMatcher.Scan scan) {
    // A request resumes at a snapshot: the load-back goes as far as the deepest committed one.
    return scan.usableHost;
  }

  @Override
  public RadixNode resumeNode(
      PrefixMatcher.Scan scan, RadixNode root, RadixNode locked, int loaded) {
    if (loaded == 0 && scan.usableDevice != locked) {
      RadixNode usable = scan.usableDevice != null ? scan.usableDevice : root;
      tree.lock(usable);
      tree.unlock(locked);
      return usable;
    }
    return locked;
  }

  @Override
  public int usableLength(int matched, RadixNode locked) {
    return locked.depth;
  }

  @Override
  public void admitted(RequestState r, RadixNode locked) {
    r.nextSnapshot = snapshotRule.nextInterval(locked.depth);
    if (locked.stateSlots != null) {
      r.resumeSlots = locked.stateSlots.clone();
    }
  }

  @Override
  public int slotsFor(RequestState r, int pages) {
    // The interval snapshots inside the tokens the pages will hold, and a tail.
    long held = r.prefixLength + (long) (r.ownCount() + pages) * pageSize;
    int sets = 0;
    for (long e = r.nextSnapshot; e <= held; e = snapshotRule.nextInterval((int) e)) {
      sets++;
    }
    return snapshotSlots * (sets + (takesTail(r) ? 1 : 0));
  }

  private boolean takesTail(RequestState r) {
    return r.tailSlots == null && !rules.noTailSnapshot;
  }

  @Override
  public void allocate(RequestState r, int slots) {
    boolean tail = takesTail(r);
    int sets = slots / snapshotSlots - (tail ? 1 : 0);
    if (sets > 0) {
      int n = r.snapshotCount + sets;
      if (r.snapshotPositions.length < n) {
        r.snapshotPositions = Arrays.copyOf(r.snapshotPositions, Math.max(n, 4));
        r.snapshotSlots = Arrays.copyOf(r.snapshotSlots, Math.max(n, 4));
      }
      for (int i = 0; i < sets; i++) {
        int[] set = new int[snapshotSlots];
        ledger.devicePool.allocate(snapshotSlots, set, 0);
        r.snapshotPositions[r.snapshotCount] = r.nextSnapshot;
        r.snapshotSlots[r.snapshotCount++] = set;
        r.nextSnapshot = snapshotRule.nextInterval(r.nextSnapshot);
      }
    }
    if (tail) {
      r.tailSlots = new int[snapshotSlots];
      ledger.devicePool.allocate(snapshotSlots, r.tailSlots, 0);
    }
  }

  @Override
  public int insert(
      RequestState r, int[] tokens, int aligned, int keyPos, KeyCopy copy, InsertResult out) {
    // A write-through registration made at a segment's hit would copy a node before it takes
    // its snapshot (or before a prepared backup is resolved): registered once the snapshots are
    // placed.
    triggers.defer();
    try {
      if (r.prepared != null) {
        return insertPrepared(r, tokens, aligned, keyPos, copy, out);
      }
      return insertInSegments(
          r, r.lockNode, r.prefixLength, tokens, aligned, aligned, keyPos, copy, out);
    } finally {
      triggers.registerDeferred();
    }
  }

  @Override
  public void chunkInserted(RequestState r, int end) {
    releaseSnapshots(r, end, false);
    renewTail(r);
  }

  @Override
  public void release(RequestState r) {
    releaseSnapshots(r, Integer.MAX_VALUE, true);
  }

  /**
   * The snapshots a step over {@code (from, to]} takes (HYBRID.md §5): the interval positions in
   * the range the request holds slots for, then the tail at the step's last other page boundary.
   */
  @Override
  public List<SnapshotTarget> stepSnapshots(RequestState r, int from, int to) {
    if (to <= from) {
      return List.of();
    }
    List<SnapshotTarget> out = null;
    for (int i = 0; i < r.snapshotCount; i++) {
      int e = r.snapshotPositions[i];
      if (e > from && e <= to && r.snapshotSlots[i] != null) {
        if (out == null) {
          out = new ArrayList<>(2);
        }
        out.add(new SnapshotTarget(e, r.snapshotSlots[i].clone()));
      }
    }
    int tail = snapshotRule.tailInStep(from, to);
    if (tail > 0 && r.tailSlots != null) {
      if (out == null) {
        out = new ArrayList<>(1);
      }
      out.add(new SnapshotTarget(tail, r.tailSlots.clone()));
      out.sort((a, b) -> Integer.compare(a.position(), b.position()));
    }
    return out == null ? List.of() : out;
  }

  /** The slots of the request's snapshot at {@code position} (an insert's segment end), or null. */
  private int[] takeSnapshot(RequestState r, int position, boolean last) {
    for (int i = 0; i < r.snapshotCount; i++) {
      if (r.snapshotPositions[i] == position && r.snapshotSlots[i] != null) {
        int[] slots = r.snapshotSlots[i];
        r.snapshotSlots[i] = null;
        return slots;
      }
    }
    if (last && r.tailSlots != null && !snapshotRule.isInterval(position)) {
      int[] slots = r.tailSlots;
      r.tailSlots = null;
      return slots;
    }
    return null;
  }

  /**
   * A node at an insert's segment end takes the request's snapshot there if it has none and
   * its backup state lets it (NONE, or COMMITTED with a host snapshot already: the state is the
   * same bits, exact by construction); else the slots are freed.
   */
  private void adoptSnapshot(RadixNode node, int[] slots) {
    ledger.requestPages -= slots.length;
    boolean state =
        node.backupState == BackupState.NONE
            || (node.backupState == BackupState.COMMITTED && node.hostStateSlots != null);
    boolean local =
        rules.snapshotFromCopyProgress == null || rules.snapshotFromCopyProgress.getAsBoolean();
    if (rules.snapshotFromCopyProgress != null && state && !local) {
      rules.fired++;
    }
    if (node.stateSlots == null
        && node.resident()
        && node.invalid == 0
        && node.parent != null
        && state
        && local) {
      ledger.account(node, -1);
      node.stateSlots = slots;
      ledger.account(node, +1);
      tree.keyChanged(node);
    } else {
      ledger.devicePool.release(slots, 0, slots.length);
    }
  }

  /** Frees the request's snapshot slots at and below {@code upTo} (all with MAX_VALUE). */
  private void releaseSnapshots(RequestState r, int upTo, boolean tail) {
    int kept = 0;
    for (int i = 0; i < r.snapshotCount; i++) {
      int[] slots = r.snapshotSlots[i];
      if (r.snapshotPositions[i] <= upTo || slots == null) {
        if (slots != null) {
          ledger.devicePool.release(slots, 0, slots.length);
          ledger.requestPages -= slots.length;
        }
      } else {
        r.snapshotPositions[kept] = r.snapshotPositions[i];
        r.snapshotSlots[kept++] = slots;
      }
    }
    for (int i = kept; i < r.snapshotCount; i++) {
      r.snapshotSlots[i] = null;
    }
    r.snapshotCount = kept;
    if (tail && r.tailSlots != null) {
      ledger.devicePool.release(r.tailSlots, 0, r.tailSlots.length);
      ledger.requestPages -= r.tailSlots.length;
      r.tailSlots = null;
    }
  }

  /**
   * After a chunk insert gave the tail to a node, the request takes a new one for its next
   * chunks, evicting if short, and goes on without one if the pool has none (replicated).
   */
  private void renewTail(RequestState r) {
    if (r.tailSlots != null || rules.noTailSnapshot) {
      return;
    }
    int free = ledger.devicePool.free();
    if (free < snapshotSlots) {
      backups.evictDevice(snapshotSlots - free);
      if (ledger.devicePool.free() < snapshotSlots) {
        return;
      }
    }
    r.tailSlots = new int[snapshotSlots];
    ledger.devicePool.allocate(snapshotSlots, r.tailSlots, 0);
    ledger.requestPages += snapshotSlots;
  }

  /**
   * The insert with snapshots of a request with a prepared backup (HYBRID.md §5, CACHE.md §11):
   * in segments up to the backup's end, whose chain of nodes then takes the backup whole or
   * rolls it back ({@link PreparedBackups#resolveChain}), and on in segments to {@code aligned}
   * only if the chain reached the backup's end. An insert that stops before the backup's end
   * gives the backup up first, as without snapshots.
   */
  private int insertPrepared(
      RequestState r, int[] tokens, int aligned, int keyPos, KeyCopy copy, InsertResult out) {
    int backupEnd = r.prepared.endToken(pageSize);
    if (aligned < backupEnd) {
      prepared.rollBack(r);
      return insertInSegments(
          r, r.lockNode, r.prefixLength, tokens, aligned, aligned, keyPos, copy, out);
    }
    int cached =
        insertInSegments(
            r, r.lockNode, r.prefixLength, tokens, backupEnd, aligned, keyPos, copy, out);
    RadixNode end = out.end == backupEnd ? out.node : null;
    prepared.resolveChain(r, end);
    if (end != null && aligned > backupEnd) {
      int more = insertInSegments(r, end, backupEnd, tokens, aligned, aligned, keyPos, copy, out);
      if (cached == backupEnd) {
        cached = more;
      }
    }
    return cached;
  }

  /**
   * The insert with snapshots (HYBRID.md §5) of {@code tokens[from, stop)} below {@code node}:
   * in segments that end at each snapshot position of the request inside the range and at its
   * end, so that every snapshot lies at a node end, where the node takes it or it is freed. The
   * tail goes to the node ending at {@code tailEnd} (the whole insert's end).
   */
  private int insertInSegments(
      RequestState r,
      RadixNode node,
      int from,
      int[] tokens,
      int stop,
      int tailEnd,
      int keyPos,
      KeyCopy copy,
      InsertResult out) {
    int pos = from;
    int cached = -1;
    while (pos < stop) {
      int end = stop;
      for (int i = 0; i < r.snapshotCount; i++) {
        int e = r.snapshotPositions[i];
        if (e > pos && e < end && r.snapshotSlots[i] != null) {
          end = e;
        }
      }
      int c =
          inserts.insert(
              node,
              tokens,
              pos,
              end,
              r.own,
              (pos - r.prefixLength) / pageSize,
              r.priority,
              r.missKey,
              keyPos,
              copy,
              triggers,
              out);
      if (cached < 0 || cached == pos) {
        cached = c;
      }
      if (out.end < end) {
        break;
      }
      int[] slots = takeSnapshot(r, end, end == tailEnd);
      if (slots != null) {
        adoptSnapshot(out.node, slots);
      }
      node = out.node;
      pos = end;
    }
    if (cached < 0) {
      out.node = node;
      out.end = pos;
      cached = pos;
    }
    return cached;
  }
}
