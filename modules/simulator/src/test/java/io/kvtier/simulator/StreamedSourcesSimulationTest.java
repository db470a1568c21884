package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Failure class 6 in the simulator: with {@code --device asserting} and copies that stall for
 * ticks, the real rule (streamed sources held until their ack commits) passes, and the broken
 * variant that frees them at once is caught by the asserting device pool, which fails the rank
 * that writes a page a copy still reads, and so the group.
 */
class StreamedSourcesSimulationTest {
  @BeforeAll
  static void quietLogs() {
    Logger.getLogger("io.kvtier.backend.sim").setLevel(Level.OFF);
    Logger.getLogger("io.kvtier.core").setLevel(Level.OFF);
  }

  private static SimulationConfig config(long seed, CacheDefect defect) {
    return SimulationConfig.builder()
        .device("asserting")
        .workload("shared-prefix:groups=6,alpha=1.1,system=24,question=12,output=4,requests=5000")
        .pageSize(4)
        .devicePages(48)
        .chunkTokens(64)
        .maxRunning(4)
        .ticks(300)
        .abortProbability(0.3)
        .ackDelay(AckDelay.HEAVY_TAIL)
        .ranks(2)
        .seed(seed)
        .watchdog(Duration.ofSeconds(5))
        .cacheDefect(defect)
        .build();
  }

  @Test
  @Timeout(300)
  void theAssertingDevicePoolCatchesSourcesFreedUnderAStreamedCopy() {
    List<String> outcomes = new ArrayList<>();
    boolean caught = false;
    for (long seed = 1; seed <= 4 && !caught; seed++) {
      SimulationResult control = new MultiRankSimulator(config(seed, CacheDefect.NONE)).run();
      assertThat(control.failure())
          .as("control, seed %d: %s", seed, control.failureMessage())
          .isEqualTo(SimulationFailure.NONE);
      SimulationResult broken =
          new MultiRankSimulator(config(seed, CacheDefect.FREED_STREAMED_SOURCES)).run();
      outcomes.add(seed + ": " + broken.failure() + " " + broken.failureMessage());
      if (broken.failure() != SimulationFailure.NONE) {
        assertThat(broken.failureMessage()).contains("still reads");
        caught = true;
      }
    }
    assertThat(caught).as("never caught: %s", outcomes).isTrue();
  }
}
