package io.kvtier.core.cache;

import java.util.concurrent.LinkedBlockingQueue;

/**
 * One daemon thread per rank that runs L3 works in submission order. Why one thread: a store is
 * called for one rank's shard only, puts and fetches of one rank do not gain from running in
 * parallel on a store that is itself the bottleneck, and an order per rank keeps the write FIFO
 * completing in order.
 *
 * <p>A work that throws an {@link Error} (a store out of memory, a stack overflow) stops the
 * worker; from then on every job of this executor throws from {@link L3Job#finished()} and
 * {@link L3Job#stepsDone()}, which the scheduler thread asks at the next sync, so the rank fails
 * there (and its group with it, {@code RankGroupFailedException}) instead of the L3 queues
 * stalling on every rank.
 */
final class BackgroundL3Executor implements L3Executor {
  private static final System.Logger LOG = System.getLogger(BackgroundL3Executor.class.getName());

  /** How long {@link #close()} waits for a running store call. */
  private static final long JOIN_MILLIS = 10_000;

  private final LinkedBlockingQueue<Task> queue = new LinkedBlockingQueue<>();
  private final Thread thread;
  private volatile boolean closed;

  /** The error that stopped the worker, or null. */
  private volatile Throwable died;

  BackgroundL3Executor(String threadName) {
    this.thread = Thread.ofPlatform().daemon().name(threadName).unstarted(this::loop);
    thread.start();
  }

  @Override
  public L3Job submit(L3Work work) {
    Task task = new Task(work, this);
    if (closed) {
      task.finished = true;
      return task;
    }
    queue.add(task);
    return task;
  }

  private void loop() {
    while (!closed) {
      Task task;
      try {
        task = queue.take();
      } catch (InterruptedException e) {
        break;
      }
      try {
        task.run();
      } catch (Throwable t) {
        if (died == null) {
          died = t;
        }
        LOG.log(System.Logger.Level.ERROR, "L3 worker " + thread.getName() + " stopped: " + t, t);
        break;
      }
    }
    for (Task t; (t = queue.poll()) != null; ) {
      t.finished = true;
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (Task t : queue) {
      t.cancel();
    }
    thread.interrupt();
    try {
      // Bounded: a store call that never returns must not hang the shutdown of the rank.
      thread.join(JOIN_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      LOG.log(
          System.Logger.Level.WARNING,
          "L3 worker "
              + thread.getName()
              + " still runs a"
              + " store call "
              + JOIN_MILLIS
              + " ms after close; leaving it behind");
    }
    for (Task t; (t = queue.poll()) != null; ) {
      t.finished = true;
    }
  }

  /** A work and its progress; written by the running thread, read by the scheduler. */
  static final class Task implements L3Job {
    private final L3Work work;

    /** The executor whose worker runs it; null when run inline. */
    private final BackgroundL3Executor owner;

    private volatile int done;
    volatile boolean finished;
    private volatile boolean cancelled;

    Task(L3Work work) {
      this(work, null);
    }

    Task(L3Work work, BackgroundL3Executor owner) {
      this.work = work;
      this.owner = owner;
    }

    /** Throws once the worker died: this rank's L3 progress is unknown from then on. */
    private void checkWorker() {
      Throwable t = owner == null ? null : owner.died;
      if (t != null) {
        throw new IllegalStateException(
            "the L3 worker "
                + owner.thread.getName()
                + " stopped on "
                + t
                + ": this rank's L3 progress is unknown, so the rank fails",
            t);
      }
    }

    void run() {
      try {
        int steps = work.steps();
        for (int i = 0; i < steps && !cancelled; i++) {
          boolean ok;
          try {
            ok = work.step(i);
          } catch (RuntimeException e) {
            // A store that throws is a miss or a failed put, never a crash of the rank.
            LOG.log(System.Logger.Level.WARNING, "L3 store call failed: " + e, e);
            ok = false;
          }
          if (!ok) {
            break;
          }
          done = i + 1;
        }
      } catch (Error e) {
        // Before finished is set: no reader may see this job finished and the worker alive.
        if (owner != null) {
          owner.died = e;
        }
        throw e;
      } finally {
        finished = true;
      }
    }

    @Override
    public int stepsDone() {
      checkWorker();
      return done;
    }

    @Override
    public boolean finished() {
      checkWorker();
      return finished;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }
}
