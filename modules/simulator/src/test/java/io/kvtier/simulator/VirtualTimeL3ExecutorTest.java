package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.L3Job;
import io.kvtier.core.cache.L3Work;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The simulator's L3 executor: work runs at submit, its progress shows by the virtual clock. */
class VirtualTimeL3ExecutorTest {

  private static L3Work steps(int count, int failAt, List<Integer> ran) {
    return new L3Work() {
      @Override
      public int steps() {
        return count;
      }

      @Override
      public boolean step(int index) {
        ran.add(index);
        return index != failAt;
      }
    };
  }

  @Test
  void stepsRunAtSubmitAndBecomeVisibleOneStepTimeApart() {
    AtomicLong now = new AtomicLong(1_000);
    VirtualTimeL3Executor executor = new VirtualTimeL3Executor(now::get, 100);
    List<Integer> ran = new ArrayList<>();
    L3Job job = executor.submit(steps(3, -1, ran));
    assertThat(ran).containsExactly(0, 1, 2);
    assertThat(job.stepsDone()).isZero();
    assertThat(job.finished()).isFalse();
    now.addAndGet(199);
    assertThat(job.stepsDone()).isEqualTo(1);
    now.addAndGet(101);
    assertThat(job.stepsDone()).isEqualTo(3);
    assertThat(job.finished()).isTrue();
  }

  @Test
  void aFailedStepStopsTheWorkAndFinishesAfterItsOwnStepTime() {
    AtomicLong now = new AtomicLong();
    VirtualTimeL3Executor executor = new VirtualTimeL3Executor(now::get, 10);
    List<Integer> ran = new ArrayList<>();
    L3Job job = executor.submit(steps(4, 1, ran));
    assertThat(ran).containsExactly(0, 1);
    now.set(19);
    assertThat(job.finished()).isFalse();
    now.set(20);
    assertThat(job.finished()).isTrue();
    assertThat(job.stepsDone()).isEqualTo(1);
  }

  @Test
  void aCancelledWorkIsFinishedAtOnce() {
    AtomicLong now = new AtomicLong();
    L3Job job = new VirtualTimeL3Executor(now::get, 1_000).submit(steps(2, -1, new ArrayList<>()));
    job.cancel();
    assertThat(job.finished()).isTrue();
    assertThat(job.stepsDone()).isZero();
  }
}
