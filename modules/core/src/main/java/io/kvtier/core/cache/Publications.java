package io.kvtier.core.cache;

/**
 * The publishes of prompts (a transfer's prefill side, {@link RankCache#publish}): the path of a
 * finished request's prompt pages, locked, backed up to the host and written to L3 whatever the
 * write thresholds, the outcome known at the write's agreed commit.
 *
 * <p>Replicated: each publication moves only on replicated state (the path's backup and L3
 * states, which change at the agreed commits of the sync step), so every rank reaches the same
 * outcome at the same call. One publication goes through three phases, each asked once:
 *
 * <pre>
 *   BACKUP  the path's nodes without a host copy are registered for backup in one ack
 *           (refused when host pages are short: then only the part already on the host goes on)
 *   WRITE   once no node of the path is PENDING, the deepest node of its host-committed prefix
 *           is written to L3 with its ancestors not in L3 (one put, L3Writes#write)
 *   DONE    once no node of the path is being written: the pages published are the prompt
 *           pages of the path's prefix that is in L3; the lock is released
 * </pre>
 *
 * The lock (a {@link CacheLock}) keeps every node of the path on the device and its host copy
 * from eviction until the end, so no eviction can free the pages mid-write.
 */
final class Publications {
  private final RankCache cache;
  private final CacheTree tree;
  private final Backups backups;
  private final L3Port l3;
  private final NodeLocks locks;
  private final TreeWalk walk;

  /** The publications in progress by request id. */
  final LongMap<Publication> byRequest = new LongMap<>(4);

  /** A prompt being published. */
  static final class Publication {
    final long requestId;

    /** The prompt's full pages. */
    final int pages;

    /** The lock on the deepest node of the prompt's path; null when the path is empty. */
    CacheLock lock;

    boolean backupAsked;
    boolean writeAsked;

    Publication(long requestId, int pages) {
      this.requestId = requestId;
      this.pages = pages;
    }
  }

  Publications(RankCache cache, CacheTree tree, Backups backups, L3Port l3, NodeLocks locks) {
    this.cache = cache;
    this.tree = tree;
    this.backups = backups;
    this.l3 = l3;
    this.locks = locks;
    this.walk = new TreeWalk(tree);
  }

  /** Starts publishing the {@code pages} full pages of {@code tokens} in {@code namespace}. */
  void start(long requestId, long namespace, int[] tokens, int pages) {
    if (byRequest.get(requestId) != null) {
      throw new IllegalStateException(
          "publish of request id="
              + requestId
              + ": it is being published already; wait for publishProgress to end it");
    }
    Publication p = new Publication(requestId, pages);
    RadixNode root = tree.rootFor(namespace, false);
    if (root != null && pages > 0 && l3.present()) {
      // A walk that changes nothing: no touch, no split; a node that goes past the prompt's
      // pages is locked, backed up and written whole.
      walk.walk(root, tokens, 0, pages * tree.pageSize);
      RadixNode deepest =
          walk.partialNode != null && walk.partialMatched > 0
              ? walk.partialNode
              : walk.pathLength > 0 ? walk.path[walk.pathLength - 1] : null;
      walk.partialNode = null;
      if (deepest != null) {
        p.lock = locks.lock(cache, deepest);
      }
    }
    byRequest.put(requestId, p);
  }

  /**
   * Advances the request's publication as far as replicated state allows: -1 while a backup or
   * the write is pending, else the pages published, and the publication ends.
   */
  int progress(long requestId) {
    Publication p = byRequest.get(requestId);
    if (p == null) {
      throw new IllegalStateException(
          "publishProgress of request id=" + requestId + ": it is not being published");
    }
    if (p.lock == null) {
      byRequest.remove(requestId);
      return 0;
    }
    RadixNode deepest = p.lock.node;
    if (!p.backupAsked) {
      p.backupAsked = true;
      if (pathNeedsBackup(deepest)) {
        // Refused when host pages are short: the write then covers what the host holds.
        backups.registerBackup(deepest, true, false);
      }
    }
    if (any(deepest, BackupState.PENDING)) {
      return -1;
    }
    if (!p.writeAsked) {
      p.writeAsked = true;
      RadixNode committed = committedPrefixEnd(deepest);
      if (committed != null) {
        l3.forceWrite(committed);
      }
    }
    for (RadixNode n = deepest; n.parent != null; n = n.parent) {
      if (n.l3State == RadixNode.L3_WRITING) {
        return -1;
      }
    }
    int stored = storedPrefixPages(deepest);
    byRequest.remove(requestId);
    locks.unlock(cache, p.lock);
    return Math.min(stored, p.pages);
  }

  private static boolean pathNeedsBackup(RadixNode deepest) {
    for (RadixNode n = deepest; n.parent != null; n = n.parent) {
      if (n.hostSlots == null) {
        return true;
      }
    }
    return false;
  }

  private static boolean any(RadixNode deepest, BackupState state) {
    for (RadixNode n = deepest; n.parent != null; n = n.parent) {
      if (n.backupState == state) {
        return true;
      }
    }
    return false;
  }

  /** The deepest node of the path whose every node from the top is host-committed and valid. */
  private static RadixNode committedPrefixEnd(RadixNode deepest) {
    RadixNode end = null;
    for (RadixNode n = deepest; n.parent != null; n = n.parent) {
      if (n.backupState != BackupState.COMMITTED || n.invalid != 0) {
        end = null;
      } else if (end == null) {
        end = n;
      }
    }
    return end;
  }

  /** The pages of the path's prefix whose every node is in L3 (and valid). */
  private static int storedPrefixPages(RadixNode deepest) {
    int pages = 0;
    for (RadixNode n = deepest; n.parent != null; n = n.parent) {
      if (n.l3State != RadixNode.L3_STORED || n.invalid != 0) {
        pages = 0;
      } else {
        pages += n.pageCount;
      }
    }
    return pages;
  }
}
