package io.kvtier.core.cache;

import io.kvtier.spi.PageKey;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The hook the rooms call where they decide that a node's pages entered or left a medium; turns
 * the node into a {@link CacheEvent} for the cache's {@link CacheEventListener}. Without a
 * listener it is {@link #NONE} and does nothing (no hashing).
 */
interface CacheEvents {
  CacheEvents NONE =
      new CacheEvents() {
        @Override
        public void stored(CacheMedium medium, RadixNode node) {}

        @Override
        public void removed(CacheMedium medium, RadixNode node) {}
      };

  /** The node's pages are now in {@code medium}; its key and parent must still be set. */
  void stored(CacheMedium medium, RadixNode node);

  /** The node's pages are no longer in {@code medium}; its key must still be set. */
  void removed(CacheMedium medium, RadixNode node);

  /**
   * What the device or host of a node about to be deleted held: the device pages, and the host
   * copy once committed (a pending copy was never reported).
   */
  default void deleted(RadixNode node) {
    if (node.deviceRuns != null) {
      removed(CacheMedium.DEVICE, node);
    }
    if (node.hostSlots != null && node.backupState == BackupState.COMMITTED) {
      removed(CacheMedium.HOST, node);
    }
  }

  /**
   * The hook for {@code listener} ({@link #NONE} for {@link CacheEventListener#NONE}), which it
   * calls in a callback of the cache's schedule once an
   * engine bound it: a replicated mutator the listener calls is refused ({@link
   * CacheSchedule#enterCallback()}), since it would change the cache in the middle of the change
   * that the event reports.
   */
  static CacheEvents of(
      CacheEventListener listener, int pageSize, Supplier<CacheSchedule> schedule) {
    return listener == CacheEventListener.NONE ? NONE : new Reporting(listener, pageSize, schedule);
  }

  /** Hashes the node's pages (kept on the node, as L3 keys keep them) and reports them. */
  final class Reporting implements CacheEvents {
    private final CacheEventListener listener;
    private final int pageSize;
    private final Supplier<CacheSchedule> schedule;

    Reporting(CacheEventListener listener, int pageSize, Supplier<CacheSchedule> schedule) {
      this.listener = listener;
      this.pageSize = pageSize;
      this.schedule = schedule;
    }

    /** Tells the listener, in a callback of a bound cache's schedule. */
    private void tell(CacheEvent event) {
      CacheSchedule owner = schedule.get();
      if (!owner.bound()) {
        listener.onEvent(event);
        return;
      }
      owner.enterCallback();
      try {
        listener.onEvent(event);
      } finally {
        owner.exitCallback();
      }
    }

    @Override
    public void stored(CacheMedium medium, RadixNode node) {
      RadixNode parent = node.parent;
      Optional<PageKey> parentHash =
          parent.parent == null
              ? Optional.empty()
              : Optional.of(last(PageHasher.nodeHashes(parent, pageSize)));
      int[] tokens =
          Arrays.copyOfRange(node.keyTokens, node.keyOffset, node.keyOffset + node.keyLength);
      tell(
          new CacheEvent.BlocksStored(
              medium, node.namespace, keys(node), parentHash, tokens, pageSize));
    }

    @Override
    public void removed(CacheMedium medium, RadixNode node) {
      tell(new CacheEvent.BlocksRemoved(medium, keys(node)));
    }

    private List<PageKey> keys(RadixNode node) {
      return PageHasher.nodeKeys(node, pageSize);
    }

    private static PageKey last(byte[][] hashes) {
      return PageKey.of(hashes[hashes.length - 1]);
    }
  }
}
