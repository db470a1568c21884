package io.kvtier.core.cache;

import java.util.ArrayList;
import java.util.List;

/**
 * An L3 executor for tests that runs nothing by itself: the test runs the steps of the queued
 * works with {@link #runStep()} or {@link #runAll()}, in submission order, so each rank's store
 * progress is exactly what the test says.
 */
final class ManualL3Executor implements L3Executor {
  private final List<Job> queue = new ArrayList<>();

  static final class Job implements L3Job {
    final L3Work work;
    int done;
    boolean finished;
    boolean cancelled;

    Job(L3Work work) {
      this.work = work;
    }

    @Override
    public int stepsDone() {
      return done;
    }

    @Override
    public boolean finished() {
      return finished;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }
  }

  @Override
  public L3Job submit(L3Work work) {
    Job job = new Job(work);
    queue.add(job);
    return job;
  }

  /** Runs one step of the oldest unfinished work; false if none is left. */
  boolean runStep() {
    for (Job job : queue) {
      if (job.finished) {
        continue;
      }
      if (job.cancelled || job.done == job.work.steps()) {
        job.finished = true;
        return true;
      }
      if (job.work.step(job.done)) {
        job.done++;
        if (job.done == job.work.steps()) {
          job.finished = true;
        }
      } else {
        job.finished = true;
      }
      return true;
    }
    return false;
  }

  void runAll() {
    while (runStep()) {
      // every step of every queued work
    }
  }

  int unfinished() {
    int n = 0;
    for (Job job : queue) {
      n += job.finished ? 0 : 1;
    }
    return n;
  }

  @Override
  public void close() {}
}
