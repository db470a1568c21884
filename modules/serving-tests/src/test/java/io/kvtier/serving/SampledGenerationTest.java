package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.Sampling;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.spi.BackendMetrics;
import java.util.Arrays;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Sampling through the whole engine with the tiny transformer, on one rank and on two (whose
 * replicas would diverge, and the group fail, if the ranks drew differently): a seed's tokens are
 * the same from a cold engine and from a cached prefix, another seed's differ, and greedy is
 * neither.
 */
@Timeout(120)
class SampledGenerationTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aSeedGivesTheSameTokensColdAndFromTheCache(int ranks) throws Exception {
    int[] system = IntStream.range(0, 48).map(i -> 1 + (i * 37) % 500).toArray();
    int[] prompt = IntStream.concat(Arrays.stream(system), IntStream.of(7, 8, 9)).toArray();
    Sampling seeded = new Sampling(1.0f, 0.9f, 0, 11);
    Completion cold;
    try (ModelEngine engine = ModelEngine.open(MODEL, config(ranks), BackendMetrics.NOOP)) {
      cold = engine.generate(prompt, 24, seeded);
    }
    try (ModelEngine engine = ModelEngine.open(MODEL, config(ranks), BackendMetrics.NOOP)) {
      // Another prompt with the same system prompt fills the cache first.
      int[] other = IntStream.concat(Arrays.stream(system), IntStream.of(3)).toArray();
      engine.generate(other, 8, new Sampling(0.7f, 1, 5, 99));
      Completion warm = engine.generate(prompt, 24, seeded);
      assertThat(warm.cachedTokens()).as("the system prompt's pages were cached").isEqualTo(48);
      assertThat(warm.tokens()).isEqualTo(cold.tokens());

      Completion reseeded = engine.generate(prompt, 24, new Sampling(1.0f, 0.9f, 0, 12));
      Completion greedy = engine.generate(prompt, 24);
      assertThat(reseeded.tokens()).isNotEqualTo(cold.tokens());
      assertThat(greedy.tokens()).isNotEqualTo(cold.tokens());
      // Greedy is sampling's limit: a temperature near 0 takes the largest logit too.
      assertThat(engine.generate(prompt, 24, new Sampling(1e-4f, 1, 0, 11)).tokens())
          .isEqualTo(greedy.tokens());
    }
  }

  /**
   * Penalties change greedy decoding (the tiny runner then chooses through the {@link
   * io.kvtier.core.rank.Sampler}), the same from a cold engine and from the cache, on 1 and 2
   * ranks; and each choice's log-probability is reported, of the raw logits.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void penaltiesChangeGreedyAlikeColdAndCached(int ranks) throws Exception {
    int[] prompt = IntStream.range(0, 40).map(i -> 1 + (i * 13) % 500).toArray();
    Sampling penalized =
        Sampling.GREEDY
            .withPenalties(new io.kvtier.core.rank.Penalties(0.5f, 2, 1.5f))
            .withLogprobs(1);
    Completion cold;
    Completion greedy;
    try (ModelEngine engine = ModelEngine.open(MODEL, config(ranks), BackendMetrics.NOOP)) {
      cold = engine.generate(prompt, 32, penalized);
      greedy = engine.generate(prompt, 32);
      Completion warm = engine.generate(prompt, 32, penalized);
      assertThat(warm.cachedTokens()).isPositive();
      assertThat(warm.tokens()).isEqualTo(cold.tokens());
    }
    assertThat(cold.tokens()).isNotEqualTo(greedy.tokens());
    assertThat(Arrays.stream(cold.tokens()).distinct().count())
        .isGreaterThanOrEqualTo(Arrays.stream(greedy.tokens()).distinct().count());
    assertThat(cold.logprobs()).hasSize(32);
    for (int i = 0; i < 32; i++) {
      assertThat(cold.logprobs().get(i).token()).isEqualTo(cold.tokens()[i]);
      assertThat(cold.logprobs().get(i).logprob()).isLessThanOrEqualTo(0);
    }
  }

  private static KvTierConfig config(int ranks) {
    ModelConfig m = MODEL.config();
    return KvTierConfig.builder()
        .device("sim")
        .host("sim")
        .collective("local")
        .ranks(ranks)
        .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, 16)
        .devicePages(64)
        .hostPages(256)
        .writePolicy(WritePolicy.WRITE_THROUGH)
        .evictionPolicy(EvictionPolicy.LRU)
        .vocabSize(m.vocabSize())
        .build();
  }
}
