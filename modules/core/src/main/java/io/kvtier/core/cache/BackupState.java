package io.kvtier.core.cache;

/**
 * Where a node's host (L2) copy stands (CACHE.md §1). Replicated: set and cleared only at
 * points every rank reaches in the same order.
 */
public enum BackupState {
  /** No host copy. */
  NONE,
  /** Host slots registered and the device-to-host copy may still run; not yet visible. */
  PENDING,
  /** The host copy is complete and visible to match, load-back and the L3 tier. */
  COMMITTED
}
