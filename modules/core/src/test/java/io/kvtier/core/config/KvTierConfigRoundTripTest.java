package io.kvtier.core.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Random valid configurations survive printing as properties and reading them back. */
class KvTierConfigRoundTripTest {

  @Test
  void toPropertiesReadsBackToAnEqualConfig() {
    TestSeeds.run(
        seed -> {
          SplittableRandom random = new SplittableRandom(seed);
          for (int i = 0; i < TestSeeds.scaled(300); i++) {
            KvTierConfig config = randomConfig(random);

            KvTierConfig again = KvTierConfig.builder().properties(config.toProperties()).build();

            assertThat(again).as("iteration %d", i).isEqualTo(config);
            assertThat(again.toProperties()).isEqualTo(config.toProperties());
          }
        });
  }

  private static KvTierConfig randomConfig(SplittableRandom random) {
    KvLayout layout =
        new KvLayout(
            random.nextInt(1, 81),
            random.nextInt(1, 9),
            1 << random.nextInt(4, 8),
            random.nextInt(1, 5),
            1 << random.nextInt(0, 7));
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device(pick(random, "auto", "sim", "cuda"))
            .host(pick(random, "auto", "sim"))
            .collective(pick(random, "auto", "local", "mpi"))
            .store(pick(random, "none", "auto", "memory"))
            .layout(
                layout.layers(),
                layout.kvHeads(),
                layout.headDim(),
                layout.dtypeBytes(),
                layout.pageSize())
            .memoryLayout(random.nextBoolean() ? MemoryLayout.LAYER_FIRST : MemoryLayout.PAGE_FIRST)
            .writePolicy(WritePolicy.values()[random.nextInt(WritePolicy.values().length)])
            .evictionPolicy(EvictionPolicy.values()[random.nextInt(EvictionPolicy.values().length)])
            .writeThroughThreshold(random.nextInt(1, 10))
            .loadBackThreshold(random.nextInt(1, 10))
            .vocabSize(random.nextInt(1, Integer.MAX_VALUE))
            .ranks(random.nextInt(1, 9))
            .digestInterval(random.nextInt(0, 100))
            .collectiveTimeout(Duration.ofMillis(random.nextLong(1, 10_000_000)));
    builder.devicePages(random.nextInt(1, 5_000));
    switch (random.nextInt(3)) {
      case 0 -> builder.hostPages(random.nextInt(1, 10_000));
      case 1 -> builder.hostRatio(1 + random.nextDouble(0.01, 4));
      default -> builder.hostBytes(random.nextInt(1, 100) * layout.pageBytes());
    }
    if (random.nextBoolean()) {
      builder.set("sim.seed", Long.toString(random.nextLong()));
    }
    return builder.build();
  }

  @SafeVarargs
  private static <T> T pick(SplittableRandom random, T... values) {
    return values[random.nextInt(values.length)];
  }
}
