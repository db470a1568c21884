package io.kvtier.core.cache;

import java.util.HashSet;
import java.util.Set;

/**
 * The slot tally of one invariant run: each device and host slot claimed by the node, request,
 * backup, ack or prefetch that owns it, the released slots a streamed copy still reads, and the
 * key store chunks viewed. A full run keeps owner tables (a slot owned twice is a violation); an
 * incremental one only checks that each claimed slot is allocated and counts.
 */
final class SlotTally {
  private final PoolLedger ledger;
  private final Object[] deviceOwner;
  private final Object[] hostOwner;

  /** Views of each key store chunk found on nodes and request key copies; null if incremental. */
  private final int[] chunkViews;

  private final ChunkStore keys;
  private long chunkInts;
  private int deviceOwned;
  private int hostOwned;

  /** Released device slots that a streamed copy still reads (held, freed at an ack's commit). */
  private int deferredDevice;

  /** The deferred slots the incremental check counted (the full one uses its owner table). */
  private final Set<Integer> deferredSeen = new HashSet<>();

  SlotTally(PoolLedger ledger, ChunkStore keys, boolean full) {
    this.ledger = ledger;
    this.keys = keys;
    this.deviceOwner = full ? new Object[ledger.devicePool.capacity()] : null;
    this.hostOwner = full ? new Object[ledger.hostPool.capacity()] : null;
    this.chunkViews = full ? new int[keys.chunkCount()] : null;
  }

  void device(int slot, Object who) {
    claim(deviceOwner, ledger.devicePool, "device", slot, who);
    deviceOwned++;
  }

  void host(int slot, Object who) {
    claim(hostOwner, ledger.hostPool, "host", slot, who);
    hostOwned++;
  }

  /** Claims every slot a node holds: its pages and snapshots in both pools. */
  void node(RadixNode n) {
    if (n.resident()) {
      if (SlotRuns.pages(n.deviceRuns) != n.pageCount) {
        InvariantRun.fail(n + " has device runs of " + SlotRuns.pages(n.deviceRuns) + " pages");
      }
      for (int slot : n.deviceSlots()) {
        device(slot, n);
      }
    }
    if (n.hostSlots != null) {
      for (int i = 0; i < n.pageCount; i++) {
        host(n.hostSlots[n.hostOffset + i], n);
      }
    }
    if (n.stateSlots != null) {
      for (int slot : n.stateSlots) {
        device(slot, n + " (snapshot)");
      }
    }
    if (n.hostStateSlots != null) {
      for (int slot : n.hostStateSlots) {
        host(slot, n + " (snapshot)");
      }
    }
  }

  private static void claim(Object[] owner, PageAllocator pool, String name, int slot, Object who) {
    int capacity = pool.capacity();
    if (slot < 0 || slot >= capacity) {
      InvariantRun.fail(
          name + " slot " + slot + " of " + who + " is out of range [0, " + capacity + ")");
    }
    if (owner == null) {
      // The incremental check: ownership by two is the full check's (it needs every owner).
      if (!pool.isAllocated(slot)) {
        InvariantRun.fail(name + " slot " + slot + " of " + who + " is free in the allocator");
      }
      return;
    }
    if (owner[slot] != null) {
      InvariantRun.fail(
          name + " slot " + slot + " is owned twice: by " + owner[slot] + " and by " + who);
    }
    if (!pool.isAllocated(slot)) {
      InvariantRun.fail(name + " slot " + slot + " of " + who + " is free in the allocator");
    }
    owner[slot] = who;
  }

  /**
   * Claims the slots of {@code held} that were released while a streamed copy reads them: no
   * one else owns them, and they are free only once the last hold goes.
   */
  void deferred(int[] held, Object who) {
    if (held == null) {
      return;
    }
    for (int slot : held) {
      if (ledger.devicePool.holds(slot) == 0) {
        InvariantRun.fail("device slot " + slot + " of " + who + " is not held in the allocator");
      }
      if (deviceOwner == null) {
        // The incremental check has no owner table: count each deferred slot once.
        if (ledger.devicePool.isDeferred(slot) && deferredSeen.add(slot)) {
          claim(null, ledger.devicePool, "device", slot, who + " (released, copy reads it)");
          deferredDevice++;
        }
        continue;
      }
      if (ledger.devicePool.isDeferred(slot) && deviceOwner[slot] == null) {
        device(slot, who + " (released, copy reads it)");
        deferredDevice++;
      }
    }
  }

  /** Counts a view of key store chunk {@code chunk} (-1: none) of {@code length} ints. */
  void keyView(int chunk, int length) {
    if (chunk >= 0 && chunkViews != null) {
      chunkViews[chunk]++;
      chunkInts += length;
    }
  }

  /** Every key store chunk is viewed exactly by the nodes and request copies that use it. */
  void checkKeyStore() {
    for (int c = 0; c < chunkViews.length; c++) {
      if (keys.views(c) != chunkViews[c]) {
        InvariantRun.fail(
            "key store chunk "
                + c
                + " counts "
                + keys.views(c)
                + " views but nodes and"
                + " request key copies hold "
                + chunkViews[c]
                + ": a view leaked or ended twice");
      }
    }
    if (keys.liveInts() != chunkInts) {
      InvariantRun.fail(
          "key store counts "
              + keys.liveInts()
              + " live ints but nodes and request key"
              + " copies view "
              + chunkInts);
    }
  }

  /** Whether this tally has owner tables (a full run). */
  boolean owners() {
    return deviceOwner != null;
  }

  /** The owner table of {@code host} or the device pool; null in an incremental run. */
  Object[] owner(boolean host) {
    return host ? hostOwner : deviceOwner;
  }

  int owned(boolean host) {
    return host ? hostOwned : deviceOwned;
  }

  int deferredDevice() {
    return deferredDevice;
  }
}
