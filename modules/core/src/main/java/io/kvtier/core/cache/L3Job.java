package io.kvtier.core.cache;

/**
 * The rank-local handle of an {@link L3Work} submitted to an {@link L3Executor}. Its answers may
 * differ between ranks and between runs; the engine reduces them across ranks before they
 * decide anything. Thread-safe.
 */
public interface L3Job {

  /**
   * Steps that returned true, counted from the first; never decreases.
   *
   * @return the count
   */
  int stepsDone();

  /**
   * Whether the work has stopped for good: every step ran, a step returned false or threw, or
   * the job was cancelled and the step running then has returned. Once true, the work never
   * touches its host pages again, so they may be reused.
   *
   * @return true when finished
   */
  boolean finished();

  /** Asks the work to stop before its next step. Idempotent. */
  void cancel();
}
