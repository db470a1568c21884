package io.kvtier.core.cache;

/**
 * The replicated attach predicate of prepared backups (CACHE.md §11): the node that holds
 * exactly the backup's pages takes the backup iff its extent equals the backup's, its device
 * pages are the backup's source pages, it is valid, not backed up and not {@code PENDING}, and
 * its parent is backed up (I3).
 *
 * <p>It is a function of {@link ReplicatedNodeView} and {@link PreparedBackup} alone, neither of
 * which can reach a copy or its completion: every rank that took the same decisions so far
 * decides the same here, however fast its copies run.
 */
final class AttachPredicate {
  private AttachPredicate() {}

  static boolean holds(ReplicatedNodeView node, PreparedBackup backup, int pageSize) {
    return holdsLink(node, backup.startToken, backup.endToken(pageSize), true);
  }

  /**
   * The predicate for one node of a chain that takes a prepared backup whole (recurrent-state
   * snapshots split the insert, HYBRID.md §5): its extent is {@code [start, end)}, its device
   * pages are the request's for that extent, it is valid, not backed up and not {@code
   * PENDING}; the chain's {@code top} node's parent is backed up (I3), the others' parents are
   * the chain's nodes that take the same ack.
   */
  static boolean holdsLink(ReplicatedNodeView node, int start, int end, boolean top) {
    return node.startToken() == start
        && node.endToken() == end
        && node.holdsRequestPages()
        && node.onDevice()
        && node.valid()
        && !node.hostBacked()
        && node.backupState() == BackupState.NONE
        && (!top || node.parentBackedUp());
  }
}
