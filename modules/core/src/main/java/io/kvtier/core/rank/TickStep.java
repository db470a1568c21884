package io.kvtier.core.rank;

/**
 * The six steps of a scheduler tick (ARCHITECTURE.md §6), in the order a {@link RankEngine}
 * enforces per tick. Only {@link #RECEIVE}, {@link #SYNC} (when the replicated outstanding count is
 * positive) and {@link #CHECK} (when a digest is due) call the collective.
 */
public enum TickStep {
  /** 1: rank 0 broadcasts the tick's commands (tag {@code recv}), every tick. */
  RECEIVE,
  /** 2: one fused MIN reduction of ready counts and failures (tag {@code sync}), then commit. */
  SYNC,
  /** 3: admit waiting requests in replicated order: match, lock, load-back, allocate. */
  ADMIT,
  /** 4: the model computes the running requests' new tokens; prepared backups stream. */
  FORWARD,
  /** 5: finished requests are inserted into the cache and released. */
  FINISH,
  /** 6: every {@code digestInterval} ticks, the replica digest check (tag {@code digest}). */
  CHECK;

  /**
   * The step after this one; {@link #CHECK} is followed by the next tick's {@link #RECEIVE}.
   *
   * @return the next step
   */
  public TickStep next() {
    return values()[(ordinal() + 1) % values().length];
  }
}
