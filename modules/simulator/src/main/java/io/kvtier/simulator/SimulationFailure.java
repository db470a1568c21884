package io.kvtier.simulator;

/** What stopped a simulator run, from the first rank that failed. */
public enum SimulationFailure {
  /** Nothing: every tick and the drain completed. */
  NONE,
  /** A digest comparison found replicas that differ ({@code ReplicaDivergenceException}). */
  REPLICA_DIVERGENCE,
  /** Ranks called different collectives ({@code CollectiveDesyncException}). */
  COLLECTIVE_DESYNC,
  /** A collective waited past the watchdog ({@code CollectiveTimeoutException}). */
  COLLECTIVE_TIMEOUT,
  /** A cache invariant broke on some rank ({@code CacheInvariantException}). */
  INVARIANT,
  /** After the drain, a rank's cache was not idle: a lock, a reservation or pages leaked. */
  LEAK,
  /** The input ended but the ranks did not drain within the drain budget. */
  NOT_DRAINED,
  /**
   * A rank's step failed, and the whole group stopped together ({@code
   * io.kvtier.core.rank.RankGroupFailedException}, on every rank): the message names the rank
   * that failed, its tick, step and cause.
   */
  RANK_FAILED,
  /** Any other exception. */
  ERROR
}
