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
  /** Any other exception. */
  ERROR
}
