package io.kvtier.simulator.replay;

/**
 * Told how far a replay has come, from the threads that run its configurations, one call at a
 * time (the replay serializes them). A terminal draws a bar; everything else ignores it.
 */
@FunctionalInterface
public interface ReplayProgress {

  /** Draws nothing. */
  ReplayProgress NONE = (done, total) -> {};

  /**
   * Requests replayed so far over all configurations, of the total.
   *
   * @param done requests replayed, up to {@code total}
   * @param total requests of all configurations and baselines together
   */
  void replayed(long done, long total);
}
