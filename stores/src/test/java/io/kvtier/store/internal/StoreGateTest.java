package io.kvtier.store.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class StoreGateTest {

  @Test
  void closesOnceAndThenRefusesOperations() {
    StoreGate gate = new StoreGate("test store");
    AtomicInteger releases = new AtomicInteger();
    assertThat(gate.closeOnce(releases::incrementAndGet)).isTrue();
    assertThat(gate.closeOnce(releases::incrementAndGet)).isFalse();
    assertThat(releases).hasValue(1);
    assertThat(gate.isClosed()).isTrue();
    assertThat(gate.tryEnter()).isFalse();
    assertThatThrownBy(() -> gate.enter("get"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("get() on the test store after close(): open a new store");
  }

  @Test
  @Timeout(10)
  void closeWaitsForTheOperationInFlight() throws Exception {
    StoreGate gate = new StoreGate("test store");
    gate.enter("get");
    AtomicBoolean released = new AtomicBoolean();
    CountDownLatch closed = new CountDownLatch(1);
    Thread closer =
        Thread.ofPlatform()
            .start(
                () -> {
                  gate.closeOnce(() -> released.set(true));
                  closed.countDown();
                });
    // The closer cannot finish while the operation holds the gate; it finishes after exit().
    assertThat(closed.await(50, TimeUnit.MILLISECONDS)).isFalse();
    assertThat(released).isFalse();
    gate.exit();
    closer.join();
    assertThat(released).isTrue();
  }
}
