package io.kvtier.simulator;

/**
 * Told after every tick of a {@link MultiRankSimulator} run, for a progress bar. Called on rank
 * 0's thread, on the simulation's hot path: keep it quick and let it throw nothing.
 */
@FunctionalInterface
public interface SimulationProgress {
  /** Reports nothing. */
  SimulationProgress NONE = (done, inputTicks) -> {};

  /**
   * One more tick completed.
   *
   * @param done ticks completed so far
   * @param inputTicks the ticks during which requests arrive ({@link SimulationConfig#ticks()});
   *     {@code done} goes past it while the run drains
   */
  void ticks(long done, long inputTicks);
}
