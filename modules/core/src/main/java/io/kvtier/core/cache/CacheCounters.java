package io.kvtier.core.cache;

/**
 * The mutable counters behind {@link CacheStats}, bumped only at replicated points (registration,
 * the agreed commits, replicated evictions). One per cache, shared by its parts.
 */
final class CacheCounters {
  long preparedBackups;
  long streamedLayers;
  long preparedAttached;
  long preparedRolledBack;
  long catchUpLayers;
  long backupsRegistered;
  long backupsCommitted;
  long backupsFailed;
  long loadsRegistered;
  long loadsCommitted;
  long loadsFailed;
  long deviceEvictions;
  long hostEvictions;

  CacheStats snapshot() {
    return new CacheStats(
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
        hostEvictions);
  }
}
