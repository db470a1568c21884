package io.kvtier.examples.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.examples.model.TinyPrompts.Prompt;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * End-to-end correctness on one rank: for a seeded workload of prompts that share prefixes, the
 * tokens the tiny transformer generates with kvtier (small device pool, host tier, evictions,
 * load-backs, every write policy, several eviction policies, page sizes 1, 4 and 16) are
 * identical to those generated without any cache. The cache's invariants are checked after every
 * request and, once drained, that nothing leaked.
 *
 * <p>{@code -Dkvtier.tests.multiplier=N} runs N times as many requests.
 */
@ExtendWith(SeedExtension.class)
class EndToEndEqualityTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  private static List<Prompt> prompts;
  private static List<int[]> expected;

  @BeforeAll
  static void computeTheReference() {
    Random random = TestSeeds.random(EndToEndEqualityTest.class.getSimpleName());
    // Enough requests that every policy sees prefixes evicted to the host and come back.
    prompts = TinyPrompts.sharedPrefixes(random, TestSeeds.scaled(100), 6, 512,
        new int[] {40, 140}, new int[] {1, 30}, new int[] {1, 10});
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    expected = new ArrayList<>();
    for (Prompt p : prompts) {
      expected.add(reference.generate(p.tokens(), p.maxTokens()));
    }
  }

  static Stream<Arguments> configurations() {
    // Every eviction policy once or more. Selective write-through backs up only nodes hit twice,
    // so it gets the policies that evict hot nodes too (an LFU would keep exactly those on the
    // device, and the host tier would never be read).
    Object[][] policies = {
      {WritePolicy.WRITE_THROUGH, EvictionPolicy.LFU, EvictionPolicy.SLRU,
        EvictionPolicy.PRIORITY},
      {WritePolicy.WRITE_THROUGH_SELECTIVE, EvictionPolicy.LRU, EvictionPolicy.FIFO,
        EvictionPolicy.MRU},
      {WritePolicy.WRITE_BACK, EvictionPolicy.FILO, EvictionPolicy.LRU, EvictionPolicy.LFU},
    };
    int[] pageSizes = {1, 4, 16};
    List<Arguments> cases = new ArrayList<>();
    int i = 0;
    for (int p = 0; p < pageSizes.length; p++) {
      for (Object[] row : policies) {
        // Every third case copies slowly, so that the model really waits for load-back layers
        // and backups are still in flight when later requests arrive.
        Map<String, String> sim = i % 3 == 1
            ? Map.of("sim.h2d-latency", "200us", "sim.d2h-latency", "300us", "sim.jitter", "0.5",
                "sim.seed", Long.toString(TestSeeds.seedFor("sim" + i)))
            : Map.of();
        cases.add(Arguments.of(pageSizes[p], row[0], row[1 + p], sim));
        i++;
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "page {0}, {1}, {2}, {3}")
  @MethodSource("configurations")
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void cachedOutputsEqualUncachedOutputs(int pageSize, WritePolicy write,
      EvictionPolicy eviction, Map<String, String> sim) throws InterruptedException {
    // A device pool of about two requests, a host tier three times larger: prefixes are evicted
    // to the host and loaded back, and some fall out of the host too.
    KvTierConfig config = SimEngines.config(MODEL.config(), pageSize, 416, 3, write, eviction,
        sim);
    long deviceHits = 0;
    long hostHits = 0;
    try (ModelEngine engine = SimEngines.open(MODEL, config)) {
      for (int i = 0; i < prompts.size(); i++) {
        Prompt p = prompts.get(i);
        Completion c = engine.generate(p.tokens(), p.maxTokens());
        int request = i;
        assertThat(c.tokens())
            .as(() -> "request " + request + " (prompt of " + p.tokens().length + " tokens, "
                + c.deviceHitTokens() + " from the device, " + c.hostHitTokens()
                + " from the host): " + Arrays.toString(p.tokens()))
            .containsExactly(expected.get(i));
        deviceHits += c.deviceHitTokens();
        hostHits += c.hostHitTokens();
        CacheInvariants.check(engine.cache());
      }
      engine.drain();
      CacheInvariants.checkIdle(engine.cache());
      EngineStats stats = engine.stats();
      System.out.printf("[e2e] page %d %s %s: %d prompt tokens, %d device hits, %d host hits,"
              + " %d computed%n", pageSize, write.configName(), eviction.configName(),
          stats.promptTokens(), stats.deviceHitTokens(), stats.hostHitTokens(),
          stats.computedTokens());
      assertThat(stats.deviceHitTokens()).isEqualTo(deviceHits);
      assertThat(stats.hostHitTokens()).isEqualTo(hostHits);
    }
    // The equality above proves something only if the cache was used from both tiers.
    assertThat(deviceHits).as("tokens reused from the device").isPositive();
    assertThat(hostHits).as("tokens loaded back from the host").isPositive();
  }
}
