package io.kvtier.core.cache;

/**
 * A piece of L3 store work cut into steps that an {@link L3Executor} runs in order, off the
 * scheduler thread: one put, one existence probe, or the chunks of one fetch. Cutting a fetch
 * into steps lets the engine see how many pages are in before the whole fetch is done.
 */
public interface L3Work {

  /**
   * The number of steps.
   *
   * @return at least 1
   */
  int steps();

  /**
   * Runs one step.
   *
   * @param index the step, from 0, in order
   * @return true if the step fully succeeded and the next may run; false stops the work here
   *     (a miss, a failure), and this step does not count as done
   */
  boolean step(int index);
}
