package io.kvtier.core.cache;

/**
 * I5, the one pool check of both the full and the incremental run: the ledger's counts
 * (reserved host pages, request pages, evictable and protected pages per pool, deferred device
 * slots) against what the other families found, and each pool's free slots plus its accounted
 * pages against its capacity. With the full run's owner tables also: the key store's views, the
 * free slots plus the owned ones against the capacity (a leak or a slot owned twice), and no
 * slot on a free list owned.
 */
final class PoolInvariants {
  private PoolInvariants() {}

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  /**
   * Checks the pools.
   *
   * @param run the run, with its slot tally filled
   * @param pages the tree's pages per category: walked (full) or kept (incremental)
   * @param requests what the requests hold
   * @param queues what the queues hold
   */
  static void check(
      InvariantRun run,
      PageSums pages,
      RequestInvariants.Status requests,
      QueueInvariants.Status queues) {
    PoolLedger ledger = run.ledger;
    SlotTally slots = run.slots;
    String kept = run.full ? "" : " (kept since the last full check)";
    long reservedHostPages = requests.reservedHostPages() + queues.reservedHostPages();
    long requestPages = requests.requestPages();
    if (reservedHostPages != ledger.reservedHostPages) {
      fail(
          "reservedHostPages="
              + ledger.reservedHostPages
              + " but prepared backups,"
              + " retirement acks and L3 prefetches hold "
              + reservedHostPages);
    }
    if (requestPages != ledger.requestPages) {
      fail("requestPages=" + ledger.requestPages + " but requests hold " + requestPages);
    }
    if (pages.deviceEvictable() != ledger.deviceEvictable
        || pages.deviceProtected() != ledger.deviceProtected) {
      fail(
          "device accounting: evictable="
              + ledger.deviceEvictable
              + " protected="
              + ledger.deviceProtected
              + " but the tree has evictable="
              + pages.deviceEvictable()
              + " protected="
              + pages.deviceProtected()
              + kept);
    }
    if (pages.hostEvictable() != ledger.hostEvictable
        || pages.hostProtected() != ledger.hostProtected) {
      fail(
          "host accounting: evictable="
              + ledger.hostEvictable
              + " protected="
              + ledger.hostProtected
              + " but the tree has evictable="
              + pages.hostEvictable()
              + " protected="
              + pages.hostProtected()
              + kept);
    }
    if (slots.owners()) {
      slots.checkKeyStore();
    }
    int deferred = slots.deferredDevice();
    pool(
        "device",
        ledger.devicePool,
        slots,
        false,
        pages.deviceEvictable() + pages.deviceProtected() + requestPages + deferred);
    if (deferred != ledger.devicePool.deferred()) {
      fail(
          "the device allocator defers "
              + ledger.devicePool.deferred()
              + " released slots but the acks and prepared backups hold "
              + deferred);
    }
    pool(
        "host",
        ledger.hostPool,
        slots,
        true,
        pages.hostEvictable() + pages.hostProtected() + reservedHostPages);
  }

  private static void pool(
      String name, PageAllocator pool, SlotTally slots, boolean host, long accounted) {
    int free = pool.free();
    if (free + accounted != pool.capacity()) {
      fail(
          "I5 "
              + name
              + ": free="
              + free
              + " + evictable/protected="
              + accounted
              + " != capacity="
              + pool.capacity());
    }
    if (!slots.owners()) {
      return;
    }
    int owned = slots.owned(host);
    if (free + owned != pool.capacity()) {
      fail(
          "I5 "
              + name
              + ": free="
              + free
              + " + owned="
              + owned
              + " != capacity="
              + pool.capacity()
              + ": a slot leaked or is owned twice");
    }
    Object[] owner = slots.owner(host);
    for (int slot : pool.freeSlots()) {
      if (owner[slot] != null || pool.isAllocated(slot)) {
        fail(name + " slot " + slot + " is on the free list but owned by " + owner[slot]);
      }
    }
  }
}
