package io.kvtier.backend.sim;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.TransferDirection;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
class SimTimingModelTest {

  /** 1 byte per nanosecond and a 1 us latency make expected durations easy to write down. */
  private static final SimConfig ONE_BYTE_PER_NS =
      SimConfig.DEFAULTS
          .with(SimConfig.H2D_BANDWIDTH, "1GB/s")
          .with(SimConfig.D2H_BANDWIDTH, "2GB/s")
          .with(SimConfig.H2D_LATENCY, "1us")
          .with(SimConfig.D2H_LATENCY, "3us");

  @Test
  void splitMixMatchesTheReferenceSequence() {
    // The first outputs of SplitMix64 seeded with 0, as published with the algorithm: the seed
    // derivation must never change, or a recorded simulation would not replay.
    long state = 0;
    long[] expected = {0xE220A8397B1DCDAFL, 0x6E789E6AA1B965F4L, 0x06C45D188009454FL};
    for (long e : expected) {
      state += 0x9E3779B97F4A7C15L;
      assertThat(SimRandom.mix64(state)).isEqualTo(e);
    }
  }

  @Test
  void nominalDurationIsLatencyPlusBytesOverBandwidthTimesSkew() {
    SimTimingModel rank0 = new SimTimingModel(ONE_BYTE_PER_NS.with(SimConfig.RANK_SKEW, "1,3"), 0);
    SimTimingModel rank1 = new SimTimingModel(ONE_BYTE_PER_NS.with(SimConfig.RANK_SKEW, "1,3"), 1);
    assertThat(rank0.durationNanos(HOST_TO_DEVICE, 0, 4000)).isEqualTo(5_000);
    assertThat(rank0.durationNanos(DEVICE_TO_HOST, 7, 4000)).isEqualTo(5_000);
    assertThat(rank1.durationNanos(HOST_TO_DEVICE, 0, 4000)).isEqualTo(15_000);
    assertThat(rank0.durationNanos(HOST_TO_DEVICE, 0, 0)).isEqualTo(1_000);
  }

  @Test
  void aBatchStartsAfterSubmitAndAfterItsPredecessor() {
    SimTimingModel m = new SimTimingModel(ONE_BYTE_PER_NS, 0);
    assertThat(m.completionNanos(HOST_TO_DEVICE, 0, 1000, 500, Long.MIN_VALUE)).isEqualTo(2_500);
    assertThat(m.completionNanos(HOST_TO_DEVICE, 1, 1000, 600, 2_500)).isEqualTo(4_500);
    assertThat(m.completionNanos(HOST_TO_DEVICE, 2, 1000, 9_000, 4_500)).isEqualTo(11_000);
  }

  @Test
  void jitterOnlySlowsDownWithinItsBound() {
    Random random = TestSeeds.random("jitterOnlySlowsDownWithinItsBound");
    long seed = random.nextLong();
    SimConfig c =
        ONE_BYTE_PER_NS
            .with(SimConfig.JITTER, "0.5")
            .with(SimConfig.SEED, Long.toString(seed))
            .with(SimConfig.SLOW_RANK, "1")
            .with(SimConfig.SLOW_FACTOR, "2");
    SimTimingModel m = new SimTimingModel(c, 1);
    long nominal = 2 * 3_000; // (1000 ns latency + 2000 bytes) x slow factor 2
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    int n = 2_000 * TestSeeds.multiplier();
    for (int seq = 0; seq < n; seq++) {
      long d = m.durationNanos(HOST_TO_DEVICE, seq, 2000);
      assertThat(d).as("seq=%d seed=%d", seq, seed).isBetween(nominal, nominal * 3 / 2);
      min = Math.min(min, d);
      max = Math.max(max, d);
    }
    // Uniform draws spread over the range; 2000 draws all in one half would mean no jitter.
    assertThat(min).isLessThan(nominal * 5 / 4);
    assertThat(max).isGreaterThan(nominal * 5 / 4);
  }

  @Test
  void timingIsAPureFunctionOfSeedRankDirectionAndSequence() {
    Random random = TestSeeds.random("timingIsAPureFunction");
    // Both directions share bandwidth and latency here, so only the jitter draws can differ.
    SimConfig c =
        SimConfig.DEFAULTS
            .with(SimConfig.JITTER, "1")
            .with(SimConfig.SEED, Long.toString(random.nextLong()));
    SimTimingModel a = new SimTimingModel(c, 3);
    SimTimingModel b = new SimTimingModel(c, 3);
    long[] forward = new long[64];
    for (int seq = 0; seq < forward.length; seq++) {
      forward[seq] = a.durationNanos(DEVICE_TO_HOST, seq, 4096);
    }
    // Same draws in reverse order from another instance: no hidden generator state.
    for (int seq = forward.length - 1; seq >= 0; seq--) {
      assertThat(b.durationNanos(DEVICE_TO_HOST, seq, 4096)).isEqualTo(forward[seq]);
    }
    assertThat(differences(a, new SimTimingModel(c, 4), DEVICE_TO_HOST, DEVICE_TO_HOST))
        .as("another rank draws differently")
        .isPositive();
    assertThat(differences(a, a, DEVICE_TO_HOST, HOST_TO_DEVICE))
        .as("the directions draw differently")
        .isPositive();
    SimConfig otherSeed = c.with(SimConfig.SEED, Long.toString(c.seed() + 1));
    assertThat(differences(a, new SimTimingModel(otherSeed, 3), DEVICE_TO_HOST, DEVICE_TO_HOST))
        .as("another seed draws differently")
        .isPositive();
  }

  private static int differences(
      SimTimingModel x, SimTimingModel y, TransferDirection dx, TransferDirection dy) {
    int count = 0;
    for (int seq = 0; seq < 64; seq++) {
      count += x.durationNanos(dx, seq, 1 << 20) != y.durationNanos(dy, seq, 1 << 20) ? 1 : 0;
    }
    return count;
  }

  @Test
  void randomFailuresFollowTheProbability() {
    Random random = TestSeeds.random("randomFailuresFollowTheProbability");
    long seed = random.nextLong();
    SimConfig c =
        SimConfig.DEFAULTS
            .with(SimConfig.FAILURE_PROBABILITY, "0.3")
            .with(SimConfig.SEED, Long.toString(seed));
    SimTimingModel m = new SimTimingModel(c, 0);
    int n = 10_000;
    int failures = 0;
    for (int seq = 0; seq < n; seq++) {
      failures += m.randomFailure(HOST_TO_DEVICE, seq) ? 1 : 0;
    }
    // Binomial(10000, 0.3) has a standard deviation of 46: 400 is more than 8 of them.
    assertThat(failures).as("seed=%d", seed).isBetween(2_600, 3_400);
    SimTimingModel never = new SimTimingModel(SimConfig.DEFAULTS, 0);
    SimTimingModel always =
        new SimTimingModel(SimConfig.DEFAULTS.with(SimConfig.FAILURE_PROBABILITY, "1"), 0);
    for (int seq = 0; seq < 100; seq++) {
      assertThat(never.randomFailure(DEVICE_TO_HOST, seq)).isFalse();
      assertThat(always.randomFailure(DEVICE_TO_HOST, seq)).isTrue();
    }
  }

  @Test
  void aRandomStallAddsTheStallDuration() {
    SimConfig c =
        ONE_BYTE_PER_NS
            .with(SimConfig.STALL_PROBABILITY, "1")
            .with(SimConfig.STALL_DURATION, "2ms");
    SimTimingModel m = new SimTimingModel(c, 0);
    assertThat(m.randomStall(HOST_TO_DEVICE, 5)).isTrue();
    assertThat(m.durationNanos(HOST_TO_DEVICE, 5, 1000)).isEqualTo(2_000 + 2_000_000);
  }

  @Test
  void hugeTimesSaturateInsteadOfWrapping() {
    SimTimingModel m = new SimTimingModel(SimConfig.DEFAULTS.with(SimConfig.H2D_BANDWIDTH, "1"), 0);
    assertThat(m.durationNanos(HOST_TO_DEVICE, 0, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
    assertThat(m.completionNanos(HOST_TO_DEVICE, 0, 1L << 40, Long.MAX_VALUE - 5, 0))
        .isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void rejectsNegativeArguments() {
    SimTimingModel m = new SimTimingModel(SimConfig.DEFAULTS, 0);
    assertThatThrownBy(() -> m.durationNanos(HOST_TO_DEVICE, -1, 0))
        .hasMessageContaining("sequence=-1");
    assertThatThrownBy(() -> m.durationNanos(HOST_TO_DEVICE, 0, -5))
        .hasMessageContaining("bytes=-5");
    assertThatThrownBy(() -> new SimTimingModel(SimConfig.DEFAULTS, -1))
        .hasMessageContaining("rank=-1");
  }
}
