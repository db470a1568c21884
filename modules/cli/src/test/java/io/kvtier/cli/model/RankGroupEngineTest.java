package io.kvtier.cli.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.cli.model.TinyPrompts.Prompt;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SeedExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The serving engine over the rank group: the same completions, token for token, as the
 * reference without a cache for 1, 2 and 4 tensor-parallel ranks, with prefix caching on and off,
 * with an L3 store and under eviction pressure; concurrent submissions batched into one tick;
 * cancel; a full queue; and a rank that fails.
 */
@ExtendWith(SeedExtension.class)
@Timeout(300)
class RankGroupEngineTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  private static KvTierConfig config(
      int ranks, int pageSize, int devicePages, Map<String, String> extra) {
    ModelConfig m = MODEL.config();
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(ranks)
            .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, pageSize)
            .devicePages(devicePages)
            .hostPages(devicePages * 3)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(60));
    extra.forEach(builder::set);
    return builder.build();
  }

  private static final AtomicInteger GROUPS = new AtomicInteger();

  private static EngineSettings settings() {
    return EngineSettings.DEFAULTS
        .withBatching(4, 16)
        .withGroup("rank-group-engine-test-" + GROUPS.incrementAndGet());
  }

  private static RankGroupEngine open(KvTierConfig config, EngineSettings settings) {
    return GenerationEngines.open(
        MODEL, config, settings, BackendMetrics.NOOP, RankSlot.Hooks.NONE);
  }

  private static List<Prompt> prompts(Random random, int count) {
    return TinyPrompts.sharedPrefixes(
        random,
        count,
        3,
        MODEL.config().vocabSize(),
        new int[] {8, 40},
        new int[] {1, 12},
        new int[] {1, 8});
  }

  /** Submits every prompt at once, then waits for all; returns the completions in order. */
  private static List<Completion> runAll(GenerationEngine engine, List<Prompt> prompts)
      throws Exception {
    List<Collected> streams = new ArrayList<>();
    for (Prompt p : prompts) {
      Collected c = new Collected();
      engine.submit(new GenerationEngine.GenerationRequest(p.tokens(), p.maxTokens()), c);
      streams.add(c);
    }
    List<Completion> out = new ArrayList<>();
    for (Collected c : streams) {
      out.add(c.get());
    }
    return out;
  }

  static Stream<Arguments> ranksAndCaching() {
    return Stream.of(
        Arguments.of(1, true),
        Arguments.of(2, true),
        Arguments.of(4, true),
        Arguments.of(1, false),
        Arguments.of(2, false),
        Arguments.of(4, false));
  }

  @ParameterizedTest(name = "ranks={0} prefixCaching={1}")
  @MethodSource("ranksAndCaching")
  void everyRankCountGivesTheReferenceTokens(int ranks, boolean caching, Random random)
      throws Exception {
    List<Prompt> prompts = prompts(random, 24);
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    long cached = 0;
    // A small device pool (12 pages of 4 tokens) against 24 prompts: eviction and load-backs.
    try (RankGroupEngine engine =
        open(
            config(ranks, 4, 24, Map.of()),
            settings().withQueueCapacity(64).withPrefixCaching(caching))) {
      List<Completion> out = runAll(engine, prompts);
      for (int i = 0; i < prompts.size(); i++) {
        Prompt p = prompts.get(i);
        assertThat(out.get(i).tokens())
            .as("request %d of %d ranks", i, ranks)
            .containsExactly(reference.generate(p.tokens(), p.maxTokens()));
        cached += out.get(i).cachedTokens();
      }
      RankEngineStats stats = engine.engineStats();
      assertThat(stats.finished()).isEqualTo(prompts.size());
      assertThat(engine.stats().requests()).isEqualTo(prompts.size());
      assertThat(engine.stats().ranks()).isEqualTo(ranks);
      // Submitted at once with 4 running: some tick advanced more than one request.
      assertThat(engine.stats().maxBatch()).isBetween(2L, 4L);
      assertThat(engine.stats().batchedTicks()).isPositive();
    }
    if (caching) {
      assertThat(cached).as("prefix hits").isPositive();
    } else {
      assertThat(cached).as("prefix hits without prefix caching").isZero();
    }
  }
}
