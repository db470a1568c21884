package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CleanupBudgetTest {

  @Test
  void waitsTogetherNeverExceedTheBudget() {
    AtomicLong now = new AtomicLong(1_000);
    CleanupBudget budget = CleanupBudget.start(2_000, now::get);
    long two = TimeUnit.MILLISECONDS.toNanos(2_000);
    assertThat(budget.remainingNanos()).isEqualTo(two);

    // a first call held until its bound, as by a cluster that lost a member
    now.addAndGet(budget.remainingNanos());
    assertThat(budget.remainingNanos()).as("the second call's wait").isZero();

    now.addAndGet(TimeUnit.SECONDS.toNanos(5));
    assertThat(budget.remainingNanos()).as("long after: never negative").isZero();
  }

  @Test
  void aCallThatReturnsEarlyLeavesTheRestToTheNext() {
    AtomicLong now = new AtomicLong(-50);
    CleanupBudget budget = CleanupBudget.start(2_000, now::get);
    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(300));
    assertThat(budget.remainingNanos()).isEqualTo(TimeUnit.MILLISECONDS.toNanos(1_700));
  }

  @Test
  void aNegativeBudgetIsRefused() {
    assertThatThrownBy(() -> CleanupBudget.start(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-1 ms is negative");
  }
}
