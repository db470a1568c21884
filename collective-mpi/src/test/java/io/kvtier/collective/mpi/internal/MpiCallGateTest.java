package io.kvtier.collective.mpi.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class MpiCallGateTest {

  private static MpiCall call(String tag, long seq) {
    return new MpiCall(MpiCall.Kind.BARRIER, 0, tag, seq);
  }

  @Test
  void stateIsOddInsideACallAndNewForEveryCall() {
    MpiCallGate gate = new MpiCallGate(null);
    assertThat(gate.inCall()).isFalse();
    long token = gate.enter(call("a", 0));
    assertThat(gate.inCall()).isTrue();
    long inside = gate.state();
    gate.exit(token);
    assertThat(gate.inCall()).isFalse();
    long second = gate.enter(call("b", 1));
    assertThat(gate.state()).isNotEqualTo(inside).isOdd();
    gate.exit(second);
  }

  @Test
  void secondThreadIsRefusedWhileACallRuns() throws Exception {
    MpiCallGate gate = new MpiCallGate(null);
    long token = gate.enter(call("held", 0));
    Throwable refused =
        CompletableFuture.supplyAsync(
                () -> {
                  try {
                    gate.enter(call("intruder", 1));
                    return null;
                  } catch (Throwable t) {
                    return t;
                  }
                })
            .get();
    assertThat(refused)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("barrier tag 'held' seq 0")
        .hasMessageContaining("one thread at a time");
    gate.exit(token);
  }

  @Test
  void funneledGateRefusesOtherThreads() throws Exception {
    MpiCallGate gate = new MpiCallGate(Thread.currentThread());
    gate.exit(gate.enter(call("mine", 0)));
    Throwable refused =
        CompletableFuture.supplyAsync(
                () -> {
                  try {
                    gate.enter(call("other", 1));
                    return null;
                  } catch (Throwable t) {
                    return t;
                  }
                })
            .get();
    assertThat(refused)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("MPI_THREAD_FUNNELED");
  }

  @Test
  void keepsTheRecentCallsOldestFirst() {
    MpiCallGate gate = new MpiCallGate(null);
    assertThat(gate.describeRecent()).isEqualTo("(none)");
    for (int i = 0; i < 11; i++) {
      gate.exit(gate.enter(call("t" + i, i)));
    }
    assertThat(gate.recent())
        .hasSize(MpiCallGate.HISTORY)
        .extracting(MpiCall::tag)
        .containsExactly("t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10");
    assertThat(gate.current().tag()).isEqualTo("t10");
  }

  @Test
  void finalizingClosesTheGateForGoodUnlessACallRuns() {
    MpiCallGate busy = new MpiCallGate(null);
    busy.enter(call("running", 0));
    assertThat(busy.enterForever(new MpiCall(MpiCall.Kind.FINALIZE, 0, "exit", -1))).isFalse();

    MpiCallGate idle = new MpiCallGate(null);
    assertThat(idle.enterForever(new MpiCall(MpiCall.Kind.FINALIZE, 0, "exit", -1))).isTrue();
    assertThatThrownBy(() -> idle.enter(call("late", 1)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("finalize");
  }
}
