package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * What a replicated predicate may know about a tree node: its extent, tier bits, backup state,
 * validity, its parent's backup bit, and whether its device pages are a given request's pages.
 * Built from replicated fields only; it has no way to name a copy, an ack's progress or a
 * rank-local count, so a predicate over it cannot read drain-timed state (ARCHITECTURE.md §4
 * rule 1).
 *
 * @param id the node id
 * @param startToken the token position its key starts at
 * @param endToken the token position its key ends at
 * @param onDevice whether its pages are on the device
 * @param hostBacked whether it has host slots (pending or committed)
 * @param backupState its backup state
 * @param valid false after a failed load marked it
 * @param parentBackedUp whether its parent is a root or has host slots (I3)
 * @param holdsRequestPages whether its device slots are exactly the request's own pages the
 *     predicate is about (the sources of the request's copies)
 */
record ReplicatedNodeView(
    long id,
    int startToken,
    int endToken,
    boolean onDevice,
    boolean hostBacked,
    BackupState backupState,
    boolean valid,
    boolean parentBackedUp,
    boolean holdsRequestPages) {

  /**
   * The view of {@code n} with respect to the first {@code count} of the request pages {@code
   * own}.
   */
  static ReplicatedNodeView of(RadixNode n, SlotRuns own, int count) {
    return of(n, own, 0, count);
  }

  /**
   * The view of {@code n} with respect to the {@code count} request pages {@code own} from
   * {@code first} on.
   */
  static ReplicatedNodeView of(RadixNode n, SlotRuns own, int first, int count) {
    boolean holds =
        n.resident()
            && n.pageCount == count
            && first + count <= own.pages()
            && Arrays.equals(n.deviceSlots(), own.toArray(first, count, null));
    RadixNode p = n.parent;
    return new ReplicatedNodeView(
        n.id,
        n.depth - n.keyLength,
        n.depth,
        n.resident(),
        n.hostSlots != null,
        n.backupState,
        n.invalid == 0,
        p.parent == null || p.hostSlots != null,
        holds);
  }
}
