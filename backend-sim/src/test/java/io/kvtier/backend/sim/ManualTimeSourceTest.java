package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class ManualTimeSourceTest {

  @Test
  void movesOnlyWhenAdvanced() {
    ManualTimeSource clock = new ManualTimeSource(100);
    assertThat(clock.nanoTime()).isEqualTo(100);
    assertThat(clock.nanoTime()).isEqualTo(100);
    clock.advance(Duration.ofNanos(50));
    assertThat(clock.nanoTime()).isEqualTo(150);
    clock.advanceTo(150);
    assertThat(clock.nanoTime()).isEqualTo(150);
    clock.advanceTo(1_000);
    assertThat(clock.nanoTime()).isEqualTo(1_000);
    assertThat(new ManualTimeSource().nanoTime()).isZero();
  }

  @Test
  void neverGoesBack() {
    ManualTimeSource clock = new ManualTimeSource(100);
    assertThatThrownBy(() -> clock.advance(Duration.ofNanos(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("negative");
    assertThatThrownBy(() -> clock.advanceTo(99))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nanos=99 is before now=100");
    assertThatThrownBy(() -> new ManualTimeSource(Long.MAX_VALUE - 1).advance(Duration.ofNanos(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("overflows");
    assertThat(clock.nanoTime()).isEqualTo(100);
  }

  @Test
  void concurrentAdvancesAllCount() throws Exception {
    ManualTimeSource clock = new ManualTimeSource();
    AtomicInteger notified = new AtomicInteger();
    clock.addListener(notified::incrementAndGet);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      threads.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    for (int i = 0; i < 1_000; i++) {
                      clock.advance(Duration.ofNanos(3));
                    }
                  }));
    }
    for (Thread t : threads) {
      t.join();
    }
    assertThat(clock.nanoTime()).isEqualTo(12_000);
    assertThat(notified.get()).isEqualTo(4_000);
  }

  @Test
  void listenersRunAfterEveryAdvanceUntilRemoved() {
    ManualTimeSource clock = new ManualTimeSource();
    List<Long> seen = new ArrayList<>();
    Runnable listener = () -> seen.add(clock.nanoTime());
    clock.addListener(listener);
    clock.advance(Duration.ofNanos(5));
    clock.advanceTo(9);
    clock.removeListener(listener);
    clock.advance(Duration.ofNanos(1));
    assertThat(seen).containsExactly(5L, 9L);
  }

  @Test
  void awaitTimeWakesWhenAnotherThreadAdvances() throws Exception {
    ManualTimeSource clock = new ManualTimeSource();
    boolean[] reached = new boolean[1];
    Thread waiter =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    reached[0] = clock.awaitTime(1_000, Duration.ofSeconds(20));
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    SimTransferEngineTest.awaitParked(waiter);
    clock.advance(Duration.ofNanos(999));
    SimTransferEngineTest.awaitParked(waiter);
    clock.advance(Duration.ofNanos(1));
    waiter.join();
    assertThat(reached[0]).isTrue();
    assertThat(clock.awaitTime(5_000, Duration.ZERO)).as("a time not reached").isFalse();
  }
}
