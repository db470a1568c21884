package io.kvtier.collective.mpi.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The watchdog's decision and message, with an action that records instead of aborting. */
@Timeout(30)
class MpiWatchdogTest {

  @Test
  void aCallThatNeverEndsIsReportedWithTheRecentCalls() throws Exception {
    MpiCallGate gate = new MpiCallGate(null);
    gate.exit(gate.enter(new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 1, "sync", 0)));
    CompletableFuture<String> fired = new CompletableFuture<>();
    MpiWatchdog watchdog =
        new MpiWatchdog(
            gate, Duration.ofMillis(50), "rank 0 of 2 in the mpi group 'g'", fired::complete);
    gate.enter(new MpiCall(MpiCall.Kind.BARRIER, 0, "stuck-here", 1));
    String message = fired.get(20, TimeUnit.SECONDS);
    watchdog.close();
    assertThat(message)
        .contains("rank 0 of 2 in the mpi group 'g'")
        .contains("in barrier tag 'stuck-here' seq 1")
        .contains("allReduce(MIN, length=1) tag 'sync' seq 0 | barrier tag 'stuck-here' seq 1")
        .contains("job is ended");
  }

  @Test
  void callsThatEndAreNotReported() throws Exception {
    MpiCallGate gate = new MpiCallGate(null);
    CompletableFuture<String> fired = new CompletableFuture<>();
    MpiWatchdog watchdog = new MpiWatchdog(gate, Duration.ofSeconds(10), "rank 0", fired::complete);
    for (int i = 0; i < 1000; i++) {
      gate.exit(gate.enter(new MpiCall(MpiCall.Kind.BARRIER, 0, "quick", i)));
    }
    watchdog.close();
    assertThat(fired).isNotDone();
  }
}
