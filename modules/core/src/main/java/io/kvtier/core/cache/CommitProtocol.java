package io.kvtier.core.cache;

import java.util.BitSet;

/**
 * The commit protocol of one rank (CACHE.md §9, ARCHITECTURE.md §4 rule 2): the only holder of
 * the rank-local copy progress ({@link LocalProgress}) as such. Its exits are the rank-local
 * answers (ready prefixes, failure sets, the model's layer waits), which decide nothing here;
 * copy completion enters the replicated world only through the commits, which take the agreed
 * counts and failure sets as arguments, so that a multi-rank caller reduces the answers first.
 */
final class CommitProtocol {
  private static final long[] NO_PROGRESS = new long[0];

  private final LocalProgress progress;
  private final Backups backups;
  private final LoadBacks loadBacks;
  private final L3Port l3;

  /** Broken variants for the regression proofs; all off outside them. */
  private final RuleVariants rules;

  CommitProtocol(
      LocalProgress progress, Backups backups, LoadBacks loadBacks, L3Port l3, RuleVariants rules) {
    this.rules = rules;
    this.progress = progress;
    this.backups = backups;
    this.loadBacks = loadBacks;
    this.l3 = l3;
  }

  LocalProgress progress() {
    return progress;
  }

  int readyWritePrefix() {
    return progress.readyWritePrefix();
  }

  int readyLoadPrefix() {
    return progress.readyLoadPrefix();
  }

  BitSet localWriteFailures(int n) {
    return progress.localWriteFailures(n);
  }

  BitSet localLoadFailures(int n) {
    return progress.localLoadFailures(n);
  }

  void commitWrites(int n, BitSet failed) {
    if (rules.localWriteCommitCount && progress.readyWritePrefix() > n) {
      // Class 7, on purpose: what finished here becomes visible before every rank has it.
      rules.fired++;
      int local = progress.readyWritePrefix();
      BitSet all = progress.localWriteFailures(local);
      all.or(failed);
      backups.commitWrites(local, all);
      return;
    }
    backups.commitWrites(n, failed);
  }

  void commitLoads(int n, BitSet failed) {
    loadBacks.commitLoads(n, failed);
  }

  /** Replicated: pending backups, loads, L3 writes and prefetches; the sync may skip iff 0. */
  int outstanding() {
    return backups.writes.size() + loadBacks.loads.size() + l3.outstanding();
  }

  /** The single-rank sync: commits everything that has finished here. */
  int sync() {
    if (outstanding() == 0) {
      return 0;
    }
    // Loads before writes, as the rank protocol does (CommitSync): see Backups.onPendingLoad.
    int loads = readyLoadPrefix();
    int writes = readyWritePrefix();
    commitLoads(loads, localLoadFailures(loads));
    commitWrites(writes, localWriteFailures(writes));
    int l3Writes = l3.readyWritePrefix();
    l3.commitWrites(l3Writes, l3.localWriteFailures(l3Writes));
    int prefetches = l3.pendingPrefetches();
    long[] values = prefetches == 0 ? NO_PROGRESS : new long[L3Tier.PREFETCH_WIDTH * prefetches];
    l3.localPrefetchProgress(values, 0);
    l3.commitPrefetches(values, 0, prefetches);
    return writes + loads + l3Writes + prefetches;
  }

  /** Rank-local: whether a load's layer is on this device, without blocking. */
  boolean isLoadLayerReady(LoadBack load, int layer) {
    checkLoad(load, layer);
    return load.committed || progress.isLoadLayerDone(load.sequence, layer);
  }

  /** Rank-local: blocks until a load's layer is on this device. */
  void awaitLoadLayer(LoadBack load, int layer) throws InterruptedException {
    checkLoad(load, layer);
    if (load.committed) {
      if (load.failed) {
        throw LocalProgress.failedLoad(load, layer);
      }
      return;
    }
    progress.awaitLoadLayer(load.sequence, layer);
  }

  private void checkLoad(LoadBack load, int layer) {
    java.util.Objects.requireNonNull(load, "load");
    java.util.Objects.checkIndex(layer, load.layers);
    if (!load.committed && !loadBacks.loads.contains(load)) {
      throw new IllegalArgumentException(
          load
              + " is not a pending load of this cache: pass a"
              + " load from this cache's Admission.pendingLoads()");
    }
  }
}
