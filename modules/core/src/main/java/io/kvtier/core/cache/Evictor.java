package io.kvtier.core.cache;

/**
 * Device and host eviction (HICACHE-SPEC §6, §7): takes candidates from the tier's {@link
 * EvictionHeap} in policy order until enough pages are free. Candidacy is re-checked when a node
 * leaves the heap, so a node that was locked or gained a child since its push is skipped.
 */
final class Evictor {
  /** Sees each victim before it is evicted; a test hook, no-op by default. */
  interface Observer {
    /** Called with the victim of one eviction step. */
    void victim(boolean host, RadixNode node);
  }

  static final Observer NO_OBSERVER = (host, node) -> {};

  private final CacheTree tree;
  private final Transfers transfers;
  Observer observer = NO_OBSERVER;
  long deviceEvictions;
  long hostEvictions;

  Evictor(CacheTree tree, Transfers transfers) {
    this.tree = tree;
    this.transfers = transfers;
  }

  RadixNode pollDevice() {
    while (tree.deviceHeap.size() > 0) {
      RadixNode n = tree.deviceHeap.pollLive();
      if (n != null && CacheTree.isDeviceCandidate(n)) {
        return n;
      }
    }
    return null;
  }

  RadixNode pollHost() {
    while (tree.hostHeap.size() > 0) {
      RadixNode n = tree.hostHeap.pollLive();
      if (n != null && CacheTree.isHostCandidate(n)) {
        return n;
      }
    }
    return null;
  }

  /**
   * Frees device pages: a committed victim is demoted to host-only, a victim without backup is
   * deleted, or under write-back first backed up (its pages are freed at that backup's commit).
   *
   * @param pages pages wanted, counting those already awaiting write-back
   * @return pages freed now
   */
  int evictDevice(int pages) {
    int freed = 0;
    boolean writeBack = transfers.writeBack();
    while (freed + transfers.writeBackPages < pages) {
      RadixNode victim = pollDevice();
      if (victim == null) {
        break;
      }
      observer.victim(false, victim);
      int victimPages = victim.pageCount;
      if (victim.backupState == BackupState.COMMITTED) {
        tree.demote(victim);
        freed += victimPages;
      } else if (writeBack && transfers.registerBackup(victim, true, true)) {
        // Freed at the commit of this backup; counted in transfers.writeBackPages.
        continue;
      } else {
        tree.delete(victim);
        freed += victimPages;
      }
      deviceEvictions++;
    }
    return freed;
  }

  /**
   * Frees host pages by deleting host-only leaves in policy order.
   *
   * @param pages pages wanted
   * @return pages freed
   */
  int evictHost(int pages) {
    int freed = 0;
    while (freed < pages) {
      RadixNode victim = pollHost();
      if (victim == null) {
        break;
      }
      observer.victim(true, victim);
      freed += victim.pageCount;
      tree.delete(victim);
      hostEvictions++;
    }
    return freed;
  }
}
