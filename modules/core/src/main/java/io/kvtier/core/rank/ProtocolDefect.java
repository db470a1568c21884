package io.kvtier.core.rank;

/**
 * Deliberate breaks of the rank protocol, for tests only: each makes a collective depend on
 * rank-local state, as real defects did (CACHE.md §14). A test sets one with {@link
 * RankEngineConfig#withDefect} on every rank and asserts that the simulator reports it as a
 * {@link io.kvtier.spi.CollectiveDesyncException}, a watchdog {@link
 * io.kvtier.spi.CollectiveTimeoutException} or a {@link ReplicaDivergenceException}, never a
 * hang and never silence. Production code leaves it at {@link #NONE}.
 */
public enum ProtocolDefect {
  /** The protocol as designed. */
  NONE,

  /**
   * Class 1, asymmetric early return around a collective: the sync step returns early when this
   * rank has no ack ready from its FIFO heads ({@code readyWritePrefix() + readyLoadPrefix() ==
   * 0}), a rank-local test, instead of testing the replicated outstanding count. The ranks with
   * ready acks enter the reduction, the others go on to their next collective.
   */
  SKIP_SYNC_WHEN_NOTHING_READY_LOCALLY,

  /**
   * Class 3, a collective inside a loop whose trip count is rank-local: the sync step issues one
   * reduction per ack that is ready on this rank before the fused reduction.
   */
  REDUCE_PER_LOCALLY_READY_ACK,

  /**
   * Class 4, a collective gated on rank-local membership: a request whose load-back has finished
   * copying on this rank enters a rank-local "loaded" map, and the forward step reduces once per
   * request in that map (a per-request "is everyone loaded?" vote) before the request may run.
   */
  REDUCE_FOR_LOCALLY_LOADED_REQUESTS
}
