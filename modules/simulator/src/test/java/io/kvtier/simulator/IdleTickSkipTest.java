package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Rank 0 skips the ticks in which nothing is outstanding and nothing arrives ({@link
 * SimulationConfig#skipIdleTicks()}): the engines decide exactly what they decide without the
 * skip (the same requests finish with the same hits, the same cache counters, the same timeline),
 * only the skipped ticks' broadcasts are gone, and no idle tick makes a call besides its recv.
 */
class IdleTickSkipTest {
  @TempDir Path dir;

  /** A Mooncake-format trace whose requests come in bursts with idle gaps between them. */
  private Path trace() throws IOException {
    SplittableRandom random = new SplittableRandom(7);
    List<String> lines = new ArrayList<>();
    long time = 0;
    for (int i = 0; i < 60; i++) {
      time += random.nextInt(4) == 0 ? 150 + random.nextInt(400) : random.nextInt(3);
      int shared = random.nextInt(5);
      int input = 16 + 8 * random.nextInt(8);
      lines.add(
          "{\"timestamp\": "
              + time
              + ", \"input_length\": "
              + input
              + ", \"output_length\": "
              + (2 + random.nextInt(12))
              + ", \"hash_ids\": ["
              + shared
              + "]}");
    }
    Path file = dir.resolve("bursts.jsonl");
    Files.write(file, lines);
    return file;
  }

  private SimulationConfig config(AckDelay delay) throws IOException {
    return SimulationConfig.builder()
        .workload("mooncake:" + trace())
        .ranks(3)
        .pageSize(8)
        .devicePages(48)
        .hostRatio(3)
        .chunkTokens(32)
        .maxRunning(4)
        .ticks(40_000)
        .abortProbability(0.02)
        .failureProbability(0.02)
        .ackDelay(delay)
        .build();
  }

  @ParameterizedTest
  @EnumSource(
      value = AckDelay.class,
      names = {"UNIFORM", "STALL"})
  void skippingIdleTicksChangesNoDecision(AckDelay delay) throws IOException {
    SimulationConfig skipping = config(delay);
    SimulationResult with = MultiRankSimulator.run(skipping);
    SimulationResult without =
        MultiRankSimulator.run(skipping.toBuilder().skipIdleTicks(false).build());

    assertThat(with.passed()).as(with.failureMessage()).isTrue();
    assertThat(without.passed()).as(without.failureMessage()).isTrue();
    assertThat(with.finished()).isEqualTo(without.finished()).isPositive();
    assertThat(with.aborted()).isEqualTo(without.aborted());
    assertThat(with.rejected()).isEqualTo(without.rejected());
    assertThat(with.loadFailureAborts()).isEqualTo(without.loadFailureAborts());
    assertThat(with.ticks()).isEqualTo(without.ticks());
    assertThat(with.promptTokens()).isEqualTo(without.promptTokens());
    assertThat(with.hitTokens()).isEqualTo(without.hitTokens());
    assertThat(with.computedTokens()).isEqualTo(without.computedTokens());
    assertThat(with.cache()).isEqualTo(without.cache());
    assertThat(with.kvVerifiedPages()).isEqualTo(without.kvVerifiedPages());
    assertThat(with.timeline()).isEqualTo(without.timeline());
    assertThat(with.collectives().syncTicks()).isEqualTo(without.collectives().syncTicks());
    assertThat(with.collectives().idleTicks()).isEqualTo(without.collectives().idleTicks());

    // Most of this trace is idle: the skip leaves out most broadcasts, and every idle tick it
    // runs makes no call besides its recv.
    assertThat(with.collectives().calls()).isLessThan(without.collectives().calls() / 2);
    assertThat(with.collectives().idleTickCalls()).isZero();
    assertThat(without.collectives().idleTickCalls()).isZero();
  }

  @Test
  void anInjectedFailureStillFiresAtItsTick() throws IOException {
    SimulationConfig config =
        config(AckDelay.UNIFORM).toBuilder()
            .rankFailure(
                RankFailureInjection.of(
                    1,
                    1_500,
                    io.kvtier.core.rank.TickStep.RECEIVE,
                    RankFailureInjection.Kind.EXCEPTION))
            .build();
    SimulationResult with = MultiRankSimulator.run(config);
    SimulationResult without =
        MultiRankSimulator.run(config.toBuilder().skipIdleTicks(false).build());
    assertThat(with.failure()).isEqualTo(SimulationFailure.RANK_FAILED);
    assertThat(with.failureTick()).isEqualTo(without.failureTick()).isEqualTo(1_500);
  }
}
