package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The executors of L3 work: in order, a failing or throwing step stops the work, close. */
class L3ExecutorTest {

  /** A work of {@code steps} steps that fails at {@code failAt} and throws at {@code throwAt}. */
  private static L3Work work(int steps, int failAt, int throwAt, CountDownLatch gate) {
    return new L3Work() {
      @Override
      public int steps() {
        return steps;
      }

      @Override
      public boolean step(int index) {
        try {
          gate.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
        if (index == throwAt) {
          throw new IllegalStateException("store down (test)");
        }
        return index != failAt;
      }
    };
  }

  private static void awaitFinished(L3Job job) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!job.finished() && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    assertThat(job.finished()).as("finished within 30 s").isTrue();
  }

  @Test
  void theBackgroundThreadRunsWorksInOrderAndStopsAtAFailureOrAThrow() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    try (L3Executor executor = L3Executor.background("l3-test")) {
      L3Job full = executor.submit(work(3, -1, -1, gate));
      L3Job failing = executor.submit(work(3, 1, -1, gate));
      L3Job throwing = executor.submit(work(3, -1, 2, gate));
      assertThat(full.finished()).isFalse();
      assertThat(throwing.finished()).isFalse();
      gate.countDown();
      awaitFinished(throwing);
      assertThat(full.finished()).isTrue();
      assertThat(full.stepsDone()).isEqualTo(3);
      assertThat(failing.finished()).isTrue();
      assertThat(failing.stepsDone()).isEqualTo(1);
      assertThat(throwing.stepsDone()).isEqualTo(2);
    }
  }

  @Test
  void anErrorInAWorkStopsTheWorkerAndEveryJobReportsItInsteadOfStalling() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    try (L3Executor executor = L3Executor.background("l3-test-error")) {
      L3Job dying =
          executor.submit(
              new L3Work() {
                @Override
                public int steps() {
                  return 2;
                }

                @Override
                public boolean step(int index) {
                  try {
                    gate.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  throw new StackOverflowError("store recursed (test)");
                }
              });
      L3Job queued = executor.submit(work(1, -1, -1, gate));
      gate.countDown();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      Throwable seen = null;
      while (seen == null && System.nanoTime() < deadline) {
        try {
          dying.finished();
          Thread.sleep(1);
        } catch (IllegalStateException e) {
          seen = e;
        }
      }
      assertThat(seen)
          .as("the dying job reports the error within 30 s")
          .hasMessageContaining("the L3 worker l3-test-error stopped on")
          .hasMessageContaining("store recursed (test)")
          .hasCauseInstanceOf(StackOverflowError.class);
      // The queue behind it never runs: its jobs, and later ones, report the error too, so the
      // scheduler fails at its next sync instead of waiting for them forever.
      for (L3Job job : new L3Job[] {queued, executor.submit(work(1, -1, -1, gate))}) {
        assertThatThrownBy(job::finished)
            .isInstanceOf(IllegalStateException.class)
            .hasCauseInstanceOf(StackOverflowError.class);
        assertThatThrownBy(job::stepsDone).isInstanceOf(IllegalStateException.class);
      }
    }
  }

  @Test
  void aCancelledWorkStopsBeforeItsNextStepAndCloseFinishesTheRest() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    L3Executor executor = L3Executor.background("l3-test-close");
    L3Job running = executor.submit(work(5, -1, -1, gate));
    L3Job queued = executor.submit(work(1, -1, -1, gate));
    running.cancel();
    gate.countDown();
    awaitFinished(running);
    assertThat(running.stepsDone()).isLessThan(5);
    executor.close();
    assertThat(queued.finished()).isTrue();
    assertThat(executor.submit(work(1, -1, -1, gate)).finished()).isTrue();
  }

  @Test
  void theInlineExecutorIsFinishedWhenSubmitReturns() {
    CountDownLatch open = new CountDownLatch(0);
    L3Job job = L3Executor.inline().submit(work(2, -1, -1, open));
    assertThat(job.finished()).isTrue();
    assertThat(job.stepsDone()).isEqualTo(2);
  }
}
