package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.TinyPrompts.Prompt;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The tiny transformer served on the {@code cpu} pools ({@code kvtier.device=cpu}, {@code
 * kvtier.host=cpu}): with copies that really run on copier threads, and load-backs whose layers
 * the model reads as they complete, the generated tokens equal those of a run without any cache,
 * with tokens reused from both tiers, on one and on two copier threads.
 */
@ExtendWith(SeedExtension.class)
class CpuBackendEndToEndTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  private static List<Prompt> prompts;
  private static List<int[]> expected;

  @BeforeAll
  static void computeTheReference() {
    Random random = TestSeeds.random(CpuBackendEndToEndTest.class.getSimpleName());
    prompts =
        TinyPrompts.sharedPrefixes(
            random,
            TestSeeds.scaled(60),
            6,
            512,
            new int[] {40, 140},
            new int[] {1, 30},
            new int[] {1, 10});
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    expected = new ArrayList<>();
    for (Prompt p : prompts) {
      expected.add(reference.generate(p.tokens(), p.maxTokens()));
    }
  }

  @ParameterizedTest(name = "page {0}, {1}, cpu.copy-threads={2}")
  @CsvSource({
    "4, WRITE_THROUGH, 2",
    "16, WRITE_BACK, 2",
    "4, WRITE_BACK, 1",
    "16, WRITE_THROUGH, 1"
  })
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void cachedOutputsOnTheCpuPoolsEqualUncachedOutputs(
      int pageSize, WritePolicy write, int copyThreads) throws InterruptedException {
    ModelConfig model = MODEL.config();
    int devicePages = 416 / pageSize;
    KvTierConfig config =
        KvTierConfig.builder()
            .device("cpu")
            .host("cpu")
            .set("cpu.copy-threads", Integer.toString(copyThreads))
            .layout(model.layers(), model.heads(), model.headDim(), Float.BYTES, pageSize)
            .devicePages(devicePages)
            .hostPages(devicePages * 3)
            .writePolicy(write)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(model.vocabSize())
            .build();
    long hostHits = 0;
    long deviceHits = 0;
    try (ModelEngine engine = ModelEngine.open(MODEL, config, BackendMetrics.NOOP)) {
      for (int i = 0; i < prompts.size(); i++) {
        Prompt p = prompts.get(i);
        Completion c = engine.generate(p.tokens(), p.maxTokens());
        assertThat(c.tokens()).as("request %d", i).containsExactly(expected.get(i));
        deviceHits += c.deviceHitTokens();
        hostHits += c.hostHitTokens();
        engine.onEngineThread(
            s -> {
              CacheInvariants.check(s.cache);
              return null;
            });
      }
      engine.drain();
      engine.onEngineThread(
          s -> {
            CacheInvariants.checkIdle(s.cache);
            return null;
          });
    }
    System.out.printf(
        "[cpu e2e] page %d %s copy-threads %d: %d device hits, %d host hits%n",
        pageSize, write, copyThreads, deviceHits, hostHits);
    assertThat(deviceHits).as("tokens reused from the device").isPositive();
    assertThat(hostHits).as("tokens loaded back from the host by real copies").isPositive();
  }
}
