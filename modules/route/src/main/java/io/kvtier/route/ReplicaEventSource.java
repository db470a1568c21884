package io.kvtier.route;

/**
 * A replica's KV events, followed into the index on a thread of its own. This class holds what
 * every transport shares: the thread, the stop flag, the applied count, and the forget/resume
 * protocol the router drives when a replica leaves and rejoins the rotation; a subclass reads its
 * transport in {@link #follow} and calls {@link #start} last in its constructor.
 */
abstract class ReplicaEventSource implements AutoCloseable {
  /** The replica's number in the index. */
  final int replica;

  /** Where the replica's blocks go. */
  final PrefixIndex index;

  private Thread thread;
  private volatile boolean running = true;
  private volatile boolean paused;
  private volatile boolean resumed;
  private volatile long applied;

  ReplicaEventSource(int replica, PrefixIndex index) {
    this.replica = replica;
    this.index = index;
  }

  /** Starts the thread that runs {@link #follow}; the subclass's fields must be set by then. */
  final void start(String name) {
    thread = Thread.ofPlatform().daemon().name(name + replica).start(this::follow);
  }

  /** Reads the transport into the index until {@link #running} is false. */
  abstract void follow();

  /** Whether the source is still open. */
  final boolean running() {
    return running;
  }

  /** Whether the router forgot the replica: apply nothing (and clear again) until resumed. */
  final boolean paused() {
    return paused;
  }

  /** Whether {@link #resume} was called since the last call of this: read from the start. */
  final boolean takeResume() {
    if (!resumed) {
      return false;
    }
    resumed = false;
    return true;
  }

  /** Counts one batch applied. */
  final void countApplied() {
    applied++;
  }

  /** Batches applied so far. */
  final long applied() {
    return applied;
  }

  /**
   * The router found the replica dead: forgets its blocks and where its stream stood, and
   * applies nothing more until {@link #resume}, so that the index holds nothing of a replica
   * out of rotation.
   */
  final void forget() {
    paused = true;
    index.clear(replica);
  }

  /**
   * The replica answers again: reads what the transport still holds of its stream from the
   * start (a restarted replica's new stream begins at sequence 0 with AllBlocksCleared).
   */
  final void resume() {
    resumed = true;
    paused = false;
  }

  /** Stops the thread, waiting up to 2 s for it. */
  @Override
  public final void close() {
    running = false;
    try {
      thread.join(2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
