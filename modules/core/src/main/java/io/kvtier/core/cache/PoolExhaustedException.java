package io.kvtier.core.cache;

/**
 * A pool cannot supply the pages asked for, even after evicting every candidate. Nothing was
 * allocated; pages that eviction freed stay free.
 */
public class PoolExhaustedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int requested;
  private final int free;
  private final int awaitingWriteBack;

  /**
   * Creates the exception.
   *
   * @param pool the pool's name
   * @param requested pages asked for
   * @param free pages free after eviction
   * @param protectedPages pages held by locks, requests and pending copies
   * @param awaitingWriteBack pages that become free when pending write-back backups commit
   */
  public PoolExhaustedException(
      String pool, int requested, int free, int protectedPages, int awaitingWriteBack) {
    super(
        pool
            + " pool exhausted: requested "
            + requested
            + " pages, "
            + free
            + " free after evicting every candidate ("
            + protectedPages
            + " protected by requests,"
            + " locks and pending copies"
            + (awaitingWriteBack > 0
                ? ", " + awaitingWriteBack + " awaiting write-back: sync() and retry"
                : "")
            + "); finish or abort requests, or make the pool larger");
    this.requested = requested;
    this.free = free;
    this.awaitingWriteBack = awaitingWriteBack;
  }

  /**
   * Pages asked for.
   *
   * @return the request
   */
  public int requested() {
    return requested;
  }

  /**
   * Pages free after eviction.
   *
   * @return free pages
   */
  public int free() {
    return free;
  }

  /**
   * Pages freed once pending write-back backups commit; retrying after a sync may succeed.
   *
   * @return pages
   */
  public int awaitingWriteBack() {
    return awaitingWriteBack;
  }
}
