package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.kvtier.core.config.CacheConfig;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link TickCommands#skippedTicks()}: the engine advances its tick and its tick counters over
 * skipped idle ticks, the skip travels in the broadcast, and a skip that is not idle, negative or
 * malformed is refused.
 */
@Timeout(60)
class IdleTickSkipEngineTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8).withMaxRunning(2);

  private static void rest(RankEngine e) {
    e.sync();
    e.admit();
    e.forward();
    e.finish();
    e.check();
  }

  @Test
  void aSkipAdvancesTheTickAndItsCountersWithoutCalls() throws Exception {
    try (RankHarness h = new RankHarness(1, CACHE, ENGINE)) {
      RankEngine e = h.engines.getFirst();
      assertThat(e.isIdle()).isTrue();
      e.receive(TickCommands.NONE);
      rest(e);
      long calls = e.stats().collectiveCalls();
      long digestChecks = e.stats().digestChecks();
      TickCommands received = e.receive(TickCommands.NONE.afterSkipping(500));
      assertThat(received.skippedTicks()).isEqualTo(500);
      assertThat(e.tickNumber()).isEqualTo(501);
      rest(e);
      RankEngineStats s = e.stats();
      assertThat(s.ticks()).isEqualTo(502);
      assertThat(s.idleTicks()).isEqualTo(502);
      assertThat(s.skippedTicks()).isEqualTo(500);
      assertThat(s.idleTickCalls()).isZero();
      // One broadcast for the tick that carried the skip, none for the skipped ones.
      assertThat(s.collectiveCalls() - calls).isEqualTo(1 + s.digestChecks() - digestChecks);
    }
  }

  @Test
  void aSkipWhileARequestIsLiveFailsTheEngine() throws Exception {
    try (RankHarness h = new RankHarness(1, CACHE, ENGINE)) {
      RankEngine e = h.engines.getFirst();
      int[] prompt = new int[14];
      e.receive(TickCommands.arrive(List.of(RankRequest.of(1, prompt, 4))));
      rest(e);
      assertThat(e.isIdle()).isFalse();
      RankGroupFailedException failed =
          catchThrowableOfType(
              RankGroupFailedException.class, () -> e.receive(TickCommands.NONE.afterSkipping(3)));
      assertThat(failed)
          .hasMessageContaining("rank 0 skipped 3 ticks at tick 1 but this rank is not idle")
          .hasCauseInstanceOf(IllegalStateException.class);
    }
  }

  @Test
  void aNegativeSkipIsRefused() {
    assertThatThrownBy(() -> TickCommands.NONE.afterSkipping(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("skippedTicks=-1 must be >= 0");
  }

  @Test
  void theSkipSurvivesTheRoundTripAndATickWithoutOneEncodesAsBefore() {
    TickCommands skip =
        TickCommands.arrive(List.of(RankRequest.of(7, new int[] {1, 2, 3}, 2)))
            .afterSkipping(123_456);
    assertThat(TickCommands.decode(skip.encode())).isEqualTo(skip);
    assertThat(TickCommands.END.afterSkipping(9).encode()).hasSize(5);
    assertThat(TickCommands.NONE.encode()).containsExactly(1, 0, 0, 0);
  }

  @Test
  void aSkipFlagWithoutTicksIsMalformed() {
    // version 1, flags "skip", a skip of 0, no arrivals, no aborts
    assertThatThrownBy(() -> TickCommands.decode(new byte[] {1, 2, 0, 0, 0}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("skipped ticks 0 with the skip flag set");
  }
}
