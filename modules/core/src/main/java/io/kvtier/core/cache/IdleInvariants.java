package io.kvtier.core.cache;

/**
 * What {@link CacheInvariants#checkIdle} adds to a full check: nothing active, locked, pending
 * or reserved, and every device page of the tree evictable.
 */
final class IdleInvariants {
  private IdleInvariants() {}

  private static void fail(String message) {
    InvariantRun.fail(message);
  }

  /**
   * Checks that the cache is idle with nothing leaked.
   *
   * @param run a full run that passed
   * @param pages the tree's pages it walked
   * @param requests what the requests hold
   * @param queues what the queues hold
   */
  static void check(
      InvariantRun run,
      PageSums pages,
      RequestInvariants.Status requests,
      QueueInvariants.Status queues) {
    RankCache cache = run.cache;
    if (cache.activeRequests() != 0) {
      fail("not idle: " + cache.activeRequests() + " requests are active");
    }
    if (cache.rooms().locks().size() != 0) {
      fail("not idle: " + cache.rooms().locks().size() + " node locks are held");
    }
    if (run.backups.writes.size() + run.loadBacks.loads.size() != 0) {
      fail(
          "not idle: "
              + run.backups.writes.size()
              + " writes and "
              + run.loadBacks.loads.size()
              + " loads are pending");
    }
    L3Tier l3 = run.l3;
    if (l3 != null && (l3.outstanding() != 0 || l3.prefetches.byRequest.size() != 0)) {
      fail(
          "not idle: "
              + l3.writes.queue.size()
              + " L3 writes and "
              + l3.prefetches.pending.size()
              + " prefetches are pending, "
              + l3.prefetches.byRequest.size()
              + " prefetch outcomes unclaimed");
    }
    for (RadixNode n : run.seen.keySet()) {
      if (n.lockRef != 0 || n.invalid != 0 || n.hostRef != 0) {
        fail(
            "not idle: "
                + n
                + " is still locked, invalid or protected by an L3 write (lockRef="
                + n.lockRef
                + ", invalid="
                + n.invalid
                + ", hostRef="
                + n.hostRef
                + ", children="
                + n.childCount
                + ", resident children="
                + n.residentChildren
                + ")");
      }
    }
    long reservedHostPages = requests.reservedHostPages() + queues.reservedHostPages();
    if (reservedHostPages != 0) {
      fail("leak: " + reservedHostPages + " host pages are reserved with no request or ack");
    }
    long requestPages = requests.requestPages();
    if (pages.deviceProtected() != 0 || requestPages != 0) {
      fail(
          "leak: "
              + pages.deviceProtected()
              + " device pages of the tree and "
              + requestPages
              + " request pages are protected with no request, lock or copy left");
    }
  }
}
