package io.kvtier.core.cache;

/**
 * Replicated counters of a cache's L3 tier: each changes only at points every rank reaches in the
 * same order (registration, the agreed commits and decisions, aborts), so ranks that took the
 * same decisions report equal stats.
 *
 * @param writesRegistered L3 writes queued (each covers a chain of host-committed nodes)
 * @param writesCommitted L3 writes every rank finished
 * @param writesFailed L3 writes that failed on some rank: the nodes are not marked stored
 * @param pagesWritten pages of committed L3 writes
 * @param prefetchesStarted prefetches started at admission (their probe ran)
 * @param prefetchesSkipped prefetches ended after the probe: the agreed hit was below the
 *     threshold or the host had no room
 * @param prefetchesTimedOut prefetches decided because some rank gave up (timeout)
 * @param prefetchesAborted prefetches whose request was aborted first
 * @param prefetchesDone prefetches that reached their decision and inserted their pages
 * @param pagesReserved host pages reserved for fetching (the agreed hit)
 * @param pagesInserted pages that became host-only tree nodes
 * @param pagesDuplicate fetched pages the tree already held when they were inserted
 * @param pagesMissed reserved pages not taken: not fetched on some rank by the decision (slow,
 *     failed, corrupt or evicted from a shard), or aborted
 * @param snapshotsWritten recurrent-state snapshots of committed L3 writes (HYBRID.md §6)
 * @param snapshotsInserted snapshots fetched by a prefetch that became a host-only node's host
 *     snapshot (a resume point)
 * @param pagesNoHostRoom pages every rank found in the store that a prefetch did not fetch
 *     because the host pool had no room for them: evicting host leaves could not free enough
 *     slots, as when the host tier holds only copies of pages still on the device (a host tier
 *     no larger than the device pool under write-through). Not in the replica digest.
 */
public record L3Stats(
    long writesRegistered,
    long writesCommitted,
    long writesFailed,
    long pagesWritten,
    long prefetchesStarted,
    long prefetchesSkipped,
    long prefetchesTimedOut,
    long prefetchesAborted,
    long prefetchesDone,
    long pagesReserved,
    long pagesInserted,
    long pagesDuplicate,
    long pagesMissed,
    long snapshotsWritten,
    long snapshotsInserted,
    long pagesNoHostRoom) {

  /** No L3 activity. */
  public static final L3Stats NONE = new L3Stats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

  /** Validates that no counter is negative. */
  public L3Stats {
    long[] all = {
      writesRegistered,
      writesCommitted,
      writesFailed,
      pagesWritten,
      prefetchesStarted,
      prefetchesSkipped,
      prefetchesTimedOut,
      prefetchesAborted,
      prefetchesDone,
      pagesReserved,
      pagesInserted,
      pagesDuplicate,
      pagesMissed,
      snapshotsWritten,
      snapshotsInserted,
      pagesNoHostRoom
    };
    for (long v : all) {
      if (v < 0) {
        throw new IllegalArgumentException(
            "negative counter in " + java.util.Arrays.toString(all) + ": counters only grow");
      }
    }
  }

  /**
   * The counters of a tier without snapshots (the form before HYBRID.md §6).
   *
   * @param writesRegistered see the record
   * @param writesCommitted see the record
   * @param writesFailed see the record
   * @param pagesWritten see the record
   * @param prefetchesStarted see the record
   * @param prefetchesSkipped see the record
   * @param prefetchesTimedOut see the record
   * @param prefetchesAborted see the record
   * @param prefetchesDone see the record
   * @param pagesReserved see the record
   * @param pagesInserted see the record
   * @param pagesDuplicate see the record
   * @param pagesMissed see the record
   */
  public L3Stats(
      long writesRegistered,
      long writesCommitted,
      long writesFailed,
      long pagesWritten,
      long prefetchesStarted,
      long prefetchesSkipped,
      long prefetchesTimedOut,
      long prefetchesAborted,
      long prefetchesDone,
      long pagesReserved,
      long pagesInserted,
      long pagesDuplicate,
      long pagesMissed) {
    this(
        writesRegistered,
        writesCommitted,
        writesFailed,
        pagesWritten,
        prefetchesStarted,
        prefetchesSkipped,
        prefetchesTimedOut,
        prefetchesAborted,
        prefetchesDone,
        pagesReserved,
        pagesInserted,
        pagesDuplicate,
        pagesMissed,
        0,
        0,
        0);
  }
}
