package io.kvtier.core.cache;

import java.util.Objects;

/**
 * A recurrent-state snapshot a request's step takes (HYBRID.md §5): after the model's recurrent
 * layers have taken in position {@code position - 1}, each writes its state into its blocks of
 * {@code slots}, device page slots the request holds until the tree takes them at its insert.
 *
 * @param position the snapshot's position, a page multiple
 * @param slots the device page slots, {@code kvtier.snapshot-slots} of them; a copy
 */
public record SnapshotTarget(int position, int[] slots) {

  /** Validates the fields. */
  public SnapshotTarget {
    Objects.requireNonNull(slots, "slots");
  }
}
