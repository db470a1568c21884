package io.kvtier.core.cache;

import java.util.List;

/**
 * The replicated counters of one cache ({@link CacheStats}): each changes only at points that
 * every rank reaches in the same order (registration, the agreed commit, a replicated eviction),
 * so two ranks that took the same decisions count the same. Adding a counter is adding a
 * constant; the order is that of the replica digest (append new ones at the end).
 */
public enum CacheCounter {
  /** Prepared backups reserved by {@link RankCache#prepareBackup}. */
  PREPARED_BACKUPS,
  /** Layer batches submitted by {@link RankCache#streamLayer}. */
  STREAMED_LAYERS,
  /** Prepared backups attached to their tree node at finish. */
  PREPARED_ATTACHED,
  /** Prepared backups rolled back (predicate false, abort, short insert). */
  PREPARED_ROLLED_BACK,
  /** Layers copied by the catch-up batch of an attached backup because they were not streamed. */
  CATCH_UP_LAYERS,
  /** Write acks queued for tree nodes (write-through, write-back, manual, attached prepared). */
  BACKUPS_REGISTERED,
  /** Write acks committed successfully. */
  BACKUPS_COMMITTED,
  /** Write acks committed as failed (rolled back). */
  BACKUPS_FAILED,
  /** Load-backs queued. */
  LOADS_REGISTERED,
  /** Load-backs committed successfully. */
  LOADS_COMMITTED,
  /** Load-backs committed as failed. */
  LOADS_FAILED,
  /** Device pages freed by eviction (demoted or deleted nodes, write-back victims at commit). */
  DEVICE_EVICTIONS,
  /** Host pages freed by eviction of host-only leaves. */
  HOST_EVICTIONS;

  private static final CacheCounter[] ALL = values();

  /** What {@code simulate --json} reports under {@code cache}, in its order (a documented text). */
  private static final List<CacheCounter> REPORTED =
      List.of(
          BACKUPS_COMMITTED,
          BACKUPS_FAILED,
          LOADS_COMMITTED,
          LOADS_FAILED,
          PREPARED_ATTACHED,
          PREPARED_ROLLED_BACK,
          DEVICE_EVICTIONS,
          HOST_EVICTIONS);

  private final String key = Counts.key(this);

  /**
   * The counter's name in JSON, tables and metrics: the constant in lower camel case.
   *
   * @return for example {@code backupsCommitted}
   */
  public String key() {
    return key;
  }

  /**
   * The counters {@code kvtier simulate --json} reports under {@code cache}, in the order it
   * writes them (scripts and the golden digests read them there).
   *
   * @return an unmodifiable list
   */
  public static List<CacheCounter> reported() {
    return REPORTED;
  }

  static CacheCounter[] all() {
    return ALL;
  }
}
