package io.kvtier.core.rank;

import io.kvtier.core.cache.CommitPort;
import io.kvtier.spi.Collective;
import io.kvtier.spi.ReduceOp;
import java.util.BitSet;

/**
 * Step 2 of a tick: the one fused reduction that turns rank-local copy progress into replicated
 * commits (ARCHITECTURE.md §4 rules 2 and 6, CACHE.md §9).
 *
 * <p>It runs iff the replicated count of outstanding operations is positive, the same answer on
 * every rank. It then all-reduces with MIN, tag {@code sync}, the array
 *
 * <pre>
 *   [readyWritePrefix, readyLoadPrefix, readyL3WritePrefix,
 *    -failed(write 0), ..., -failed(load 0), ..., -failed(L3 write 0), ...,
 *    found-or-fetched(prefetch 0), -gaveUp(prefetch 0), finished(prefetch 0), ...]
 * </pre>
 *
 * with one element per pending write, load and L3 write ack and three per pending L3 prefetch:
 * {@code pendingWrites()}, {@code pendingLoads()}, {@code pendingL3Writes()} and {@code
 * pendingPrefetches()} are replicated, so the array has the same shape on every rank, and the L3
 * tier's rank-local progress (puts finished, pages found or fetched, timeouts passed) enters the
 * tree through this one reduction too: MIN of the pages gives what every rank has, MIN of the
 * negated flag is the MAX of "gave up", MIN of "finished" says whether every rank's store work
 * has stopped. An
 * element is -1 if that ack's copy failed on this rank, else 0, and its MIN is -1 iff the copy
 * failed on some rank: one reduction yields both how much every rank has finished and the OR of
 * the failures. (Packing 64 failure bits per element does not work with MIN: MIN of {@code ~x}
 * is {@code ~MAX(x)}, and a signed MAX of two words is one of them, not their bitwise OR; the
 * simulator caught a first version that packed them, by loading pages of a backup that had
 * failed on one rank only.) Failures at or past the agreed count are dropped: some rank has not
 * finished those acks yet, and a later tick commits them.
 */
final class CommitSync {
  static final String TAG = "sync";

  private final CommitPort commits;
  private final Collective collective;
  private final ProtocolDefect defect;

  CommitSync(CommitPort commits, Collective collective, ProtocolDefect defect) {
    this.commits = commits;
    this.collective = collective;
    this.defect = defect;
  }

  /**
   * Runs the reduction and the commits if anything is outstanding.
   *
   * @return whether the reduction ran
   */
  boolean run() {
    int readyWrites = commits.readyWritePrefix();
    int readyLoads = commits.readyLoadPrefix();
    boolean skip =
        defect == ProtocolDefect.SKIP_SYNC_WHEN_NOTHING_READY_LOCALLY
            ? readyWrites + readyLoads == 0
            : commits.outstandingOperations() == 0;
    if (skip) {
      return false;
    }
    if (defect == ProtocolDefect.REDUCE_PER_LOCALLY_READY_ACK) {
      for (int i = 0; i < readyWrites + readyLoads; i++) {
        collective.allReduce(ReduceOp.MAX, new long[] {i}, "sync-ack");
      }
    }
    int writes = commits.pendingWrites();
    int loads = commits.pendingLoads();
    int l3Writes = commits.pendingL3Writes();
    int prefetches = commits.pendingPrefetches();
    int readyL3 = commits.readyL3WritePrefix();
    int head = 3;
    int l3Offset = head + writes + loads;
    int prefetchOffset = l3Offset + l3Writes;
    long[] values = new long[prefetchOffset + CommitPort.PREFETCH_SYNC_WIDTH * prefetches];
    values[0] = readyWrites;
    values[1] = readyLoads;
    values[2] = readyL3;
    flags(commits.localWriteFailures(readyWrites), values, head);
    flags(commits.localLoadFailures(readyLoads), values, head + writes);
    flags(commits.localL3WriteFailures(readyL3), values, l3Offset);
    commits.localPrefetchProgress(values, prefetchOffset);
    // In place: the values are not read again, and no second array per tick.
    collective.allReduceInto(ReduceOp.MIN, values, values, TAG);
    long[] agreed = values;
    int commitWrites = (int) agreed[0];
    int commitLoads = (int) agreed[1];
    int commitL3 = (int) agreed[2];
    // Loads first: a failed load marks what was computed on it untrusted before the writes'
    // commit could make that KV a committed host copy and queue its L3 put (CACHE.md §10).
    commits.commitLoads(commitLoads, failures(agreed, head + writes, commitLoads));
    commits.commitWrites(commitWrites, failures(agreed, head, commitWrites));
    commits.commitL3Writes(commitL3, failures(agreed, l3Offset, commitL3));
    commits.commitPrefetches(agreed, prefetchOffset, prefetches);
    return true;
  }

  private static void flags(BitSet failed, long[] into, int offset) {
    for (int i = failed.nextSetBit(0); i >= 0; i = failed.nextSetBit(i + 1)) {
      into[offset + i] = -1;
    }
  }

  /** The acks among the first {@code count} whose copy failed on some rank. */
  private static BitSet failures(long[] agreed, int offset, int count) {
    BitSet failed = new BitSet();
    for (int i = 0; i < count; i++) {
      if (agreed[offset + i] < 0) {
        failed.set(i);
      }
    }
    return failed;
  }
}
