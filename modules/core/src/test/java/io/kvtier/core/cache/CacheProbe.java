package io.kvtier.core.cache;

import io.kvtier.core.config.EvictionPolicy;
import java.util.ArrayList;
import java.util.List;

/**
 * Brute-force views of a cache's tree for tests, written from the spec independently of the
 * engine's indexes: a side-effect-free reference match that scans children instead of hashing,
 * eviction candidates by scanning every node, the policy order from CACHE.md §6, and the
 * pages eviction could reclaim.
 */
final class CacheProbe {
  private CacheProbe() {}

  /** What a match must report. */
  record Expected(int deviceLength, int hostHitLength) {}

  static Expected referenceMatch(RankCache cache, long namespace, int[] tokens) {
    int pageSize = cache.config().pageSize();
    int aligned = tokens.length - tokens.length % pageSize;
    RadixNode node = cache.rooms().tree().roots.get(namespace);
    int pos = 0;
    int device = 0;
    int host = 0;
    boolean onDevice = true;
    while (node != null && pos < aligned) {
      RadixNode next = null;
      for (RadixNode c : children(node)) {
        boolean same = true;
        for (int i = 0; i < pageSize && same; i++) {
          same = c.keyTokens[c.keyOffset + i] == tokens[pos + i];
        }
        if (same) {
          next = c;
          break;
        }
      }
      if (next == null || next.invalid != 0) {
        break;
      }
      int k = 0;
      while (k < next.keyLength
          && pos + k < aligned
          && next.keyTokens[next.keyOffset + k] == tokens[pos + k]) {
        k++;
      }
      k -= k % pageSize;
      if (onDevice && next.resident()) {
        device = pos + k;
      } else if (!next.resident() && next.hostSlots != null) {
        onDevice = false;
        host = pos + k - device;
      } else {
        break;
      }
      pos += k;
      if (k < next.keyLength) {
        break;
      }
      node = next;
    }
    return new Expected(device, host);
  }

  static List<RadixNode> children(RadixNode node) {
    List<RadixNode> out = new ArrayList<>();
    if (node.children != null) {
      for (int s = 0; s < node.children.slotCount(); s++) {
        for (RadixNode c = node.children.valueAt(s); c != null; c = c.sameKeyNext) {
          out.add(c);
        }
      }
    }
    return out;
  }

  /** Every node of every namespace, roots excluded, parents before children. */
  static List<RadixNode> nodes(RankCache cache) {
    List<RadixNode> out = new ArrayList<>();
    LongMap<RadixNode> roots = cache.rooms().tree().roots;
    for (int s = 0; s < roots.slotCount(); s++) {
      if (roots.valueAt(s) != null) {
        collect(roots.valueAt(s), out);
      }
    }
    return out;
  }

  private static void collect(RadixNode n, List<RadixNode> out) {
    for (RadixNode c : children(n)) {
      out.add(c);
      collect(c, out);
    }
  }

  static boolean deviceCandidate(RadixNode n) {
    if (!n.resident() || n.lockRef != 0 || n.backupState == BackupState.PENDING || n.invalid != 0) {
      return false;
    }
    for (RadixNode c : children(n)) {
      if (c.resident()) {
        return false;
      }
    }
    return true;
  }

  static boolean hostCandidate(RadixNode n) {
    return !n.resident()
        && n.hostSlots != null
        && children(n).isEmpty()
        && n.lockRef == 0
        && n.hostRef == 0
        && n.backupState == BackupState.COMMITTED
        && n.invalid == 0;
  }

  /** The policy key of CACHE.md §6; compare lexicographically, then by id. */
  static long[] policyKey(EvictionPolicy policy, RadixNode n) {
    return switch (policy) {
      case LRU -> new long[] {n.lastAccess, 0, n.id};
      case LFU -> new long[] {n.hitCount, n.lastAccess, n.id};
      case FIFO -> new long[] {n.created, 0, n.id};
      case MRU -> new long[] {-n.lastAccess, 0, n.id};
      case FILO -> new long[] {-n.created, 0, n.id};
      case PRIORITY -> new long[] {n.priority, n.lastAccess, n.id};
      case SLRU -> new long[] {n.hitCount >= 2 ? 1 : 0, n.lastAccess, n.id};
    };
  }

  /** The candidate the policy must evict next, or null. */
  static RadixNode expectedVictim(RankCache cache, boolean host) {
    EvictionPolicy policy = cache.config().evictionPolicy();
    RadixNode best = null;
    long[] bestKey = null;
    for (RadixNode n : nodes(cache)) {
      if (host ? hostCandidate(n) : deviceCandidate(n)) {
        long[] key = policyKey(policy, n);
        if (best == null || java.util.Arrays.compare(key, bestKey) < 0) {
          best = n;
          bestKey = key;
        }
      }
    }
    return best;
  }

  /** Device pages that repeated eviction could free: unlocked, valid, nothing pending below. */
  static int reclaimablePages(RankCache cache) {
    int total = 0;
    LongMap<RadixNode> roots = cache.rooms().tree().roots;
    for (int s = 0; s < roots.slotCount(); s++) {
      if (roots.valueAt(s) != null) {
        for (RadixNode c : children(roots.valueAt(s))) {
          total += reclaimable(c, cache.rooms().ledger().devicePool)[1];
        }
      }
    }
    return total;
  }

  /**
   * {whether the whole resident subtree is reclaimable (1/0), reclaimable pages in it}; a page
   * that a streamed copy still reads is held, and its eviction frees it only later.
   */
  private static int[] reclaimable(RadixNode n, PageAllocator pool) {
    if (!n.resident()) {
      return new int[] {1, 0};
    }
    boolean all = true;
    int pages = 0;
    for (RadixNode c : children(n)) {
      int[] r = reclaimable(c, pool);
      all &= r[0] == 1;
      pages += r[1];
    }
    boolean self = all && n.lockRef == 0 && n.backupState != BackupState.PENDING && n.invalid == 0;
    int free = 0;
    if (self) {
      int[] slots = new int[n.pageCount];
      n.copyDeviceSlots(slots, 0, pool);
      for (int slot : slots) {
        free += pool.holds(slot) == 0 ? 1 : 0;
      }
      // A recurrent-state snapshot leaves with the node's pages (HYBRID.md §5); one that a
      // prepared backup streamed is held like a page.
      if (n.stateSlots != null) {
        for (int slot : n.stateSlots) {
          free += pool.holds(slot) == 0 ? 1 : 0;
        }
      }
    }
    return new int[] {self ? 1 : 0, pages + free};
  }

  /** A digest of the replicated state: ids, keys, slots, states, locks, clocks. */
  static String digest(RankCache cache) {
    StringBuilder sb = new StringBuilder();
    sb.append(cache.logicalClock())
        .append('/')
        .append(cache.deviceUsage())
        .append('/')
        .append(cache.hostUsage())
        .append('/')
        .append(cache.outstandingOperations());
    for (RadixNode n : nodes(cache)) {
      sb.append('\n')
          .append(n.id)
          .append(':')
          .append(n.parent.id)
          .append(':')
          .append(java.util.Arrays.toString(n.tokens()))
          .append(':')
          .append(java.util.Arrays.toString(n.deviceSlots()))
          .append(':')
          .append(java.util.Arrays.toString(n.hostSlots()))
          .append(':')
          .append(n.backupState)
          .append(':')
          .append(n.lockRef)
          .append(':')
          .append(n.hitCount)
          .append(':')
          .append(n.lastAccess)
          .append(':')
          .append(n.invalid);
    }
    return sb.toString();
  }
}
