package io.kvtier.core.cache;

/**
 * The token of the one owner allowed to change a cache's replicated state: the {@link
 * io.kvtier.core.rank.RankEngine} that drives it ({@link RankCache#bindSchedule}). The engine
 * enters the schedule for each of its steps and leaves it after. On several ranks, a replicated
 * mutator of a bound cache called outside a step (a server that kept the cache it handed to the
 * engine, another thread) throws {@link IllegalStateException} naming the method, because that
 * change would happen on this rank only and the ranks would diverge; and the single-rank commit
 * forms ({@code commitWrites(int)}, {@code commitLoads(int)}, {@code sync()}) throw always: they
 * apply this rank's own failures. On one rank nothing can diverge, and nothing is refused
 * between steps.
 *
 * <p>Inside a step, the owner's callbacks (a request listener, the model, and the cache's own KV
 * event listener) run in a callback
 * ({@link #enterCallback()}): a replicated mutator called from one, on the step's own thread, is
 * refused on every rank alike and whatever the number of ranks, since a listener or model that
 * does it on one rank only (a lookup through {@code match} touches the nodes' clocks and may
 * split one) would change that replica alone, and one that does it on every rank would change
 * the state under the step that is running.
 *
 * <p>An unbound cache (a single-rank user without an engine, a benchmark) has no owner and no
 * check.
 */
public final class CacheSchedule {
  /** The schedule of an unbound cache: no owner, nothing checked. */
  static final CacheSchedule UNBOUND = new CacheSchedule(1, false);

  private final int worldSize;
  private final boolean bound;

  /** The thread inside a step of the owner; null between steps. */
  private Thread stepping;

  /** How deep the owner is in callbacks of its step: 0 when it runs its own code. */
  private int callbacks;

  CacheSchedule(int worldSize, boolean bound) {
    this.worldSize = worldSize;
    this.bound = bound;
  }

  /** The number of ranks of the group the owner drives; 1 for an unbound cache. */
  public int worldSize() {
    return worldSize;
  }

  /**
   * Enters a step: until {@link #exit()}, the calling thread may change the cache.
   *
   * @throws IllegalStateException if a step is in progress already
   */
  public void enter() {
    if (stepping != null) {
      throw new IllegalStateException(
          "the cache's schedule is entered already by " + stepping + ": steps do not nest");
    }
    stepping = Thread.currentThread();
  }

  /** Leaves the step entered last. */
  public void exit() {
    stepping = null;
    callbacks = 0;
  }

  /**
   * The owner calls code of its user (a listener, the model) from inside a step: until {@link
   * #exitCallback()}, every replicated mutator is refused. Callbacks may nest.
   */
  public void enterCallback() {
    callbacks++;
  }

  /** The callback entered last returned (or threw). */
  public void exitCallback() {
    if (callbacks > 0) {
      callbacks--;
    }
  }

  /**
   * Throws if the owner drives several ranks and the calling thread is not inside its step. On
   * one rank a change between steps diverges from nothing, so a single-rank server (or its test)
   * may still make one.
   */
  void checkMutation(String method) {
    if (callbacks > 0) {
      throw new IllegalStateException(
          "RankCache."
              + method
              + " called from a callback of a RankEngine step (a RequestListener, the"
              + " ModelRunner, the cache's CacheEventListener): it would change the cache under the running step, and on one"
              + " rank only the replicas would diverge; a callback may read through"
              + " RankEngine.view() (cachedLength is a lookup that touches nothing), and"
              + " changes go through the engine (requests and aborts in the tick's commands)");
    }
    if (worldSize > 1 && stepping != Thread.currentThread()) {
      throw new IllegalStateException(
          "RankCache."
              + method
              + " called outside the steps of the RankEngine that drives this cache ("
              + worldSize
              + " rank(s)): a change made here would happen on this rank only and the"
              + " replicas would diverge; read through RankEngine.view(), and change the cache"
              + " only through the engine (submit requests and aborts with RankEngine.tick)");
    }
  }

  /** Throws if the owner drives several ranks: the single-rank commit forms diverge there. */
  void checkSingleRank(String method, String safe) {
    checkMutation(method);
    if (worldSize > 1) {
      throw new IllegalStateException(
          "RankCache."
              + method
              + " is for a single rank only, but this cache is driven for "
              + worldSize
              + " ranks: it applies this rank's own copy failures, so one rank's rollback would"
              + " be another's commit; use "
              + safe
              + " with the agreed values, as the engine's sync step does");
    }
  }

  boolean bound() {
    return bound;
  }
}
