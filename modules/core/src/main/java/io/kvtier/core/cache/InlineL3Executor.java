package io.kvtier.core.cache;

/** Runs a work's steps inside {@code submit}; the job is finished when {@code submit} returns. */
final class InlineL3Executor implements L3Executor {

  @Override
  public L3Job submit(L3Work work) {
    BackgroundL3Executor.Task task = new BackgroundL3Executor.Task(work);
    task.run();
    return task;
  }

  @Override
  public void close() {}
}
