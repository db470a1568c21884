package io.kvtier.core.cache;

import java.util.Arrays;

/**
 * One node of a rank's radix tree: a page-aligned run of token ids with the device and host page
 * slots that hold its KV (CACHE.md §1).
 *
 * <p>Callers get nodes from {@link MatchResult} and {@link Admission} and may read them, lock them
 * with {@link RankCache#lock(RadixNode)} or ask for their page keys; they never change them. The
 * fields are package-private and mutated only by the engine on its one scheduler thread. A node's
 * key, host slots and page hashes are views into shared arrays ({@code array, offset, length}) so
 * that splitting a node copies none of them; its device slots are a few runs.
 */
public final class RadixNode {
  final long id;
  final long namespace;
  RadixNode parent;

  int[] keyTokens;
  int keyOffset;

  /** The key store chunk {@link #keyTokens} is, or -1 for an array of the node's own. */
  int keyChunk = -1;

  int keyLength;
  int pageCount;

  /** Tokens from the root to the end of this node's key. */
  int depth;

  /** The key under which this node sits in its parent's children: first token or page hash. */
  long childKey;

  LongMap<RadixNode> children;

  /** The next sibling whose first page hashes to the same {@link #childKey}. */
  RadixNode sameKeyNext;

  int childCount;
  int residentChildren;

  /**
   * Device slots as runs of consecutive slots, {@code (start, length)} pairs covering {@link
   * #pageCount} pages in order (see {@link SlotRuns}); null = evicted.
   */
  int[] deviceRuns;

  /** Host slots as a view; null = no host copy. */
  int[] hostSlots;

  int hostOffset;

  BackupState backupState = BackupState.NONE;
  WriteAck pendingWrite;
  boolean evictAfterBackup;
  LoadBack pendingLoad;

  /** 0 valid; {@link #UNTRUSTED} after a failed load. */
  byte invalid;

  int lockRef;

  /** Protects the host copy: 1 while an L3 write reads it ({@link #pendingL3Write}), else 0. */
  int hostRef;

  /** {@link #L3_NONE}, {@link #L3_WRITING} or {@link #L3_STORED}; replicated (agreed). */
  byte l3State;

  /** The L3 write this node's host copy is being put by, or null. */
  L3Write pendingL3Write;

  /**
   * Device page slots of the recurrent-state snapshot at this node's end (HYBRID.md §5), {@code
   * kvtier.snapshot-slots} of them; null = none. Present only on a resident node.
   */
  int[] stateSlots;

  /**
   * Host page slots of the snapshot at this node's end; null = none. Present only with host
   * slots, in the node's {@link #backupState} (a snapshot has no backup of its own).
   */
  int[] hostStateSlots;

  /** 0, or 1 when L3 holds this node's snapshot (set with {@link #l3State}; replicated). */
  byte l3Snapshot;

  long hitCount;
  int priority;
  long lastAccess;
  long created;

  int deviceStamp;
  int hostStamp;
  boolean deleted;

  /** Listed in {@link ChangedNodes} for the digest, for the invariant check. */
  boolean digestListed;

  boolean checkListed;

  /** This node's term in {@link ChangedNodes#nodeDigestSum}; 0 while it is in no sum. */
  long digestTerm;

  /** How the incremental check counted this node: see {@link ChangedNodes#keptEpoch}. */
  int keptEpoch;

  int keptDevicePages;
  int keptHostPages;

  /** Chained SHA-256 page hashes as 32-byte digests, computed on demand; may be null. */
  byte[][] pageHashes;

  /**
   * Part of a failed load, or computed on top of one: neither the device nor the host copy may be
   * used.
   */
  static final byte UNTRUSTED = 2;

  /** Not in L3 (or a write failed). */
  static final byte L3_NONE = 0;

  /** An L3 write of the node is pending. */
  static final byte L3_WRITING = 1;

  /** Every rank's store took the node's pages (agreed), or they were prefetched from it. */
  static final byte L3_STORED = 2;

  RadixNode(long id, long namespace) {
    this.id = id;
    this.namespace = namespace;
  }

  boolean isRootNode() {
    return parent == null;
  }

  boolean resident() {
    return deviceRuns != null;
  }

  /**
   * Writes the device slots, one per page, to {@code dst[off..off+pageCount)}; {@code pool} is
   * the device pool, or null (see {@link SlotRuns#copy}).
   */
  void copyDeviceSlots(int[] dst, int off, PageAllocator pool) {
    SlotRuns.copy(deviceRuns, 0, pageCount, dst, off, pool);
  }

  /**
   * The node's id, unique in its cache and identical on every rank.
   *
   * @return the id; roots have ids too
   */
  public long id() {
    return id;
  }

  /**
   * The namespace (LoRA id / cache salt) the node belongs to.
   *
   * @return the namespace given at admission
   */
  public long namespace() {
    return namespace;
  }

  /**
   * Whether this is a namespace root (empty key).
   *
   * @return true for a root
   */
  public boolean isRoot() {
    return parent == null;
  }

  /**
   * The number of tokens in this node's key.
   *
   * @return a multiple of the page size; 0 for a root
   */
  public int tokenLength() {
    return keyLength;
  }

  /**
   * The number of tokens from the root up to and including this node.
   *
   * @return the prefix length the node ends at
   */
  public int prefixLength() {
    return depth;
  }

  /**
   * A copy of this node's token ids.
   *
   * @return a new array of {@link #tokenLength()} ids; empty once the node is deleted (its key
   *     storage is reused by later nodes)
   */
  public int[] tokens() {
    if (keyTokens == null) {
      return new int[0];
    }
    return Arrays.copyOfRange(keyTokens, keyOffset, keyOffset + keyLength);
  }

  /**
   * Whether the node's pages are on the device.
   *
   * @return false once evicted
   */
  public boolean onDevice() {
    return deviceRuns != null;
  }

  /**
   * A copy of the node's device slots.
   *
   * @return the slots, empty if evicted
   */
  public int[] deviceSlots() {
    return deviceRuns == null ? new int[0] : SlotRuns.toArray(deviceRuns);
  }

  /**
   * A copy of the node's host slots.
   *
   * @return the slots, empty if not backed up
   */
  public int[] hostSlots() {
    return hostSlots == null
        ? new int[0]
        : Arrays.copyOfRange(hostSlots, hostOffset, hostOffset + pageCount);
  }

  /**
   * The node's backup state.
   *
   * @return {@code NONE}, {@code PENDING} or {@code COMMITTED}
   */
  public BackupState backupState() {
    return backupState;
  }

  /**
   * Whether the node's end has a recurrent-state snapshot on the device.
   *
   * @return true with device snapshot slots
   */
  public boolean hasDeviceSnapshot() {
    return stateSlots != null;
  }

  /**
   * Whether the node's end has a recurrent-state snapshot on the host (visible to match only
   * once the node is {@code COMMITTED}).
   *
   * @return true with host snapshot slots
   */
  public boolean hasHostSnapshot() {
    return hostStateSlots != null;
  }

  /**
   * A copy of the device slots of the node's snapshot.
   *
   * @return the slots, empty without a device snapshot
   */
  public int[] stateSlots() {
    return stateSlots == null ? new int[0] : stateSlots.clone();
  }

  /**
   * A copy of the host slots of the node's snapshot.
   *
   * @return the slots, empty without a host snapshot
   */
  public int[] hostStateSlots() {
    return hostStateSlots == null ? new int[0] : hostStateSlots.clone();
  }

  /**
   * The number of locks held on this node and its descendants.
   *
   * @return the lock count
   */
  public int lockRef() {
    return lockRef;
  }

  /**
   * The number of hits counted on the node (write-through trigger, LFU order).
   *
   * @return the hit count
   */
  public long hitCount() {
    return hitCount;
  }

  /**
   * The node's eviction priority (highest priority of the requests that inserted or hit it).
   *
   * @return the priority
   */
  public int priority() {
    return priority;
  }

  /**
   * The logical time of the last access.
   *
   * @return a value of the cache's logical clock
   */
  public long lastAccess() {
    return lastAccess;
  }

  /**
   * Whether the node has been removed from the tree; a removed node's other fields are stale.
   *
   * @return true once deleted
   */
  public boolean isDeleted() {
    return deleted;
  }

  @Override
  public String toString() {
    return "RadixNode[id="
        + id
        + ", ns="
        + namespace
        + ", tokens="
        + keyLength
        + ", depth="
        + depth
        + (deviceRuns != null ? ", device" : "")
        + ", "
        + backupState
        + (lockRef > 0 ? ", lockRef=" + lockRef : "")
        + (invalid != 0 ? ", invalid" : "")
        + (deleted ? ", deleted" : "")
        + "]";
  }
}
