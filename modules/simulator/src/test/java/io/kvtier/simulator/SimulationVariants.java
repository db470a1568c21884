package io.kvtier.simulator;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * Small random simulator configs for the property tests: every knob drawn from the seed, pools
 * and prompts sized so that both tiers are under pressure and a 400-tick run of 8 ranks takes a
 * fraction of a second. Every workload holds more requests than 400 ticks can admit (at most 3
 * arrive per tick), so the input ends by the tick limit, not by running dry.
 */
final class SimulationVariants {
  private SimulationVariants() {}

  /** The config of one property-test run. */
  static SimulationConfig variant(long seed, int ranks, int ticks) {
    SplittableRandom r = new SplittableRandom(seed);
    int pageSize = pickInt(r, 1, 2, 4, 4, 8);
    int deviceTokens = 192 + r.nextInt(320);
    WritePolicy write = WritePolicy.values()[r.nextInt(WritePolicy.values().length)];
    double hostRatio =
        write == WritePolicy.WRITE_BACK || r.nextInt(8) > 0 ? pickDouble(r, 1.5, 2.0, 2.0, 4.0) : 0;
    SimulationConfig config =
        SimulationConfig.builder()
            .ranks(ranks)
            .seed(seed)
            .ticks(ticks)
            .workload(workload(r))
            .pageSize(pageSize)
            .devicePages(Math.max(8, deviceTokens / pageSize))
            .hostRatio(hostRatio)
            .writePolicy(write)
            .eviction(EvictionPolicy.values()[r.nextInt(EvictionPolicy.values().length)])
            .ackDelay(AckDelay.values()[r.nextInt(AckDelay.values().length)])
            .failureProbability(r.nextInt(4) == 0 ? 0.02 : 0)
            .abortProbability(pickDouble(r, 0, 0.05, 0.15))
            .chunkTokens(pickInt(r, 4, 8, 16, 64))
            .maxRunning(1 + r.nextInt(6))
            .arrivalsPerTick(1 + r.nextInt(3))
            .digestInterval(1)
            .watchdog(Duration.ofSeconds(30))
            .build();
    // Drawn last, so that the configs above stay those of earlier versions of this class.
    if (hostRatio > 0 && r.nextInt(3) == 0) {
      return config.toBuilder().l3(l3(r)).build();
    }
    return config;
  }

  /** An L3 tier with a random policy, threshold, store speed, rank skew, timeout and faults. */
  private static L3Simulation l3(SplittableRandom r) {
    L3PrefetchPolicy policy =
        L3PrefetchPolicy.values()[r.nextInt(L3PrefetchPolicy.values().length)];
    return L3Simulation.NONE
        .withStore("memory")
        .withCapacityBytes(pickInt(r, 1, 4, 64) * 1024L * 1024)
        .withPrefetch(policy, pickInt(r, 1, 8, 32))
        .withTiming(
            pickInt(r, 0, 200, 800, 3000),
            pickDouble(r, 0, 0.5, 2.0),
            Duration.ofMillis(pickInt(r, 1, 5, 20)),
            pickDouble(r, 0, 0, 0.02, 0.1));
  }

  private static String workload(SplittableRandom r) {
    return switch (r.nextInt(3)) {
      case 0 ->
          "shared-prefix:groups=%d,alpha=%s,system=%d,question=%d,output=%d,requests=5000"
              .formatted(
                  2 + r.nextInt(7),
                  pickDouble(r, 0.8, 1.1, 1.4),
                  8 + r.nextInt(40),
                  2 + r.nextInt(16),
                  r.nextInt(7));
      case 1 ->
          "multiturn:conversations=%d,turns=%d,first=%d,answer=%d,question=%d"
              .formatted(
                  150 + r.nextInt(100),
                  8 + r.nextInt(5),
                  8 + r.nextInt(16),
                  1 + r.nextInt(4),
                  2 + r.nextInt(7));
      default ->
          "doc-qa:documents=%d,length=%d,asks=%d,question=%d,output=%d,order=%s"
              .formatted(
                  2 + r.nextInt(6),
                  24 + r.nextInt(80),
                  1200 / 2 + r.nextInt(400),
                  2 + r.nextInt(8),
                  r.nextInt(4),
                  pickText(r, "random", "tile", "interleave"));
    };
  }

  private static String pickText(SplittableRandom r, String... values) {
    return values[r.nextInt(values.length)];
  }

  private static int pickInt(SplittableRandom r, int... values) {
    return values[r.nextInt(values.length)];
  }

  private static double pickDouble(SplittableRandom r, double... values) {
    return values[r.nextInt(values.length)];
  }
}
