package io.kvtier.core.cache;

import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;

/**
 * The write triggers of a hit (CACHE.md §8, §12): a resident node hit often enough is backed
 * up to the host (write-through, selective write-through), and a host-committed one written to
 * L3. The tree tells every counted hit to this listener, so that the backups and the L3 tier are
 * reached from the tree without the tree holding them.
 *
 * <p>While a prepared backup is resolved ({@link #defer()} .. {@link #registerDeferred()}), a
 * wanted registration is remembered instead of made, so that the node that takes the prepared
 * backup does not also get an ordinary one. Replicated: hit counts, residency and host slots
 * decide, nothing rank-local.
 */
final class WriteTriggers implements HitListener {
  private final Backups backups;
  private final L3Port l3;
  private final long writeThreshold;

  /** Whether there is a host tier with a transfer engine to copy through. */
  private final boolean hostTier;

  private boolean deferred;
  private final ArrayList<RadixNode> wanted = new ArrayList<>(4);

  WriteTriggers(Backups backups, L3Port l3, CacheConfig config, boolean hostTier) {
    this.backups = backups;
    this.l3 = l3;
    this.hostTier = hostTier;
    this.writeThreshold =
        switch (config.writePolicy()) {
          case WRITE_THROUGH -> 1;
          case WRITE_THROUGH_SELECTIVE -> config.writeThroughThreshold();
          case WRITE_BACK -> Long.MAX_VALUE;
        };
  }

  @Override
  public void hit(RadixNode n) {
    if (writeThroughWanted(n)) {
      backups.registerBackup(n, false, false);
    }
    l3.maybeWrite(n);
  }

  /**
   * Whether the node should be backed up now. While deferred, a wanted node is remembered and
   * false returned; see {@link #registerDeferred()}.
   */
  private boolean writeThroughWanted(RadixNode n) {
    boolean want =
        n.hitCount >= writeThreshold
            && n.hostSlots == null
            && n.resident()
            && n.invalid == 0
            && hostTier;
    if (want && deferred) {
      wanted.add(n);
      return false;
    }
    return want;
  }

  /** Collects write-through registrations instead of making them, until the call below. */
  void defer() {
    deferred = true;
  }

  /**
   * Makes the write-through registrations collected since {@link #defer()}, in the order they
   * were wanted, for the nodes that still want one (an attached node has host slots now and is
   * skipped).
   */
  void registerDeferred() {
    deferred = false;
    for (int i = 0; i < wanted.size(); i++) {
      RadixNode n = wanted.get(i);
      if (!n.deleted && writeThroughWanted(n)) {
        backups.registerBackup(n, false, false);
      }
    }
    wanted.clear();
  }
}
