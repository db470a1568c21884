package io.kvtier.core.cache;

/**
 * Where a rank runs its L3 store work: off the scheduler thread, so that a slow store never
 * stalls a tick. Everything it reports is rank-local progress (ARCHITECTURE.md §4, right column);
 * the engine turns it into replicated state only through the fused MIN reduction of the sync.
 *
 * <p>{@link #background(String)} is the production choice: one daemon thread per rank that runs
 * the works in submission order. {@link #inline()} runs a work during {@link #submit}, for
 * single-threaded tools and tests. A simulator may supply its own, for example one whose jobs
 * report progress against a virtual clock.
 */
public interface L3Executor extends AutoCloseable {

  /**
   * Queues a work.
   *
   * @param work the work
   * @return its handle
   */
  L3Job submit(L3Work work);

  /**
   * Stops the executor: works not started never run and report finished, the running one is
   * cancelled and waited for. Idempotent.
   */
  @Override
  void close();

  /**
   * One daemon thread that runs the works in submission order.
   *
   * @param threadName the thread's name
   * @return the executor; close it before the store it calls
   */
  static L3Executor background(String threadName) {
    return new BackgroundL3Executor(threadName);
  }

  /**
   * Runs each work to its end inside {@link #submit}.
   *
   * @return the executor
   */
  static L3Executor inline() {
    return new InlineL3Executor();
  }
}
