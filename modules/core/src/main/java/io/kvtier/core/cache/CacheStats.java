package io.kvtier.core.cache;

/**
 * Replicated counters of one cache: every field changes only at points that every rank reaches
 * in the same order (registration, the agreed commit, a replicated eviction), so two ranks that
 * took the same decisions report equal stats. Nothing here counts rank-local progress.
 *
 * @param preparedBackups prepared backups reserved by {@link RankCache#prepareBackup}
 * @param streamedLayers layer batches submitted by {@link RankCache#streamLayer}
 * @param preparedAttached prepared backups attached to their tree node at finish
 * @param preparedRolledBack prepared backups rolled back (predicate false, abort, short insert)
 * @param catchUpLayers layers copied by the catch-up batch of an attached backup because they
 *     had not been streamed
 * @param backupsRegistered write acks queued for tree nodes (write-through, write-back, manual
 *     and attached prepared backups)
 * @param backupsCommitted write acks committed successfully
 * @param backupsFailed write acks committed as failed (rolled back)
 * @param loadsRegistered load-backs queued
 * @param loadsCommitted load-backs committed successfully
 * @param loadsFailed load-backs committed as failed
 * @param deviceEvictions device pages freed by eviction (demoted or deleted nodes, write-back
 *     victims at their commit)
 * @param hostEvictions host pages freed by eviction of host-only leaves
 */
public record CacheStats(
    long preparedBackups,
    long streamedLayers,
    long preparedAttached,
    long preparedRolledBack,
    long catchUpLayers,
    long backupsRegistered,
    long backupsCommitted,
    long backupsFailed,
    long loadsRegistered,
    long loadsCommitted,
    long loadsFailed,
    long deviceEvictions,
    long hostEvictions) {

  /** Validates that no counter is negative. */
  public CacheStats {
    long[] all = {
      preparedBackups,
      streamedLayers,
      preparedAttached,
      preparedRolledBack,
      catchUpLayers,
      backupsRegistered,
      backupsCommitted,
      backupsFailed,
      loadsRegistered,
      loadsCommitted,
      loadsFailed,
      deviceEvictions,
      hostEvictions
    };
    for (long v : all) {
      if (v < 0) {
        throw new IllegalArgumentException(
            "negative counter in " + java.util.Arrays.toString(all) + ": counters only grow");
      }
    }
  }
}
