package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ArrayKv;
import io.kvtier.model.tiny.ForwardPass;
import io.kvtier.model.tiny.LayerGate;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.TinyPrompts.Prompt;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SeedExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tiny transformer with a layer mix, the cache off: each layer kind changes the output, SWA
 * sees no further back than its windows, the output is deterministic and chunking-invariant, and
 * 1, 2 and 4 ranks generate the reference tokens.
 */
@ExtendWith(SeedExtension.class)
class HybridModelTest {
  private static final ModelConfig BASE = ModelConfig.DEFAULTS.withLayers(3);

  private static TinyTransformer model(String mix) {
    return new TinyTransformer(BASE.withLayerMix(LayerMix.parse(mix, "mix")));
  }

  @Test
  void everyLayerKindChangesTheOutput(Random random) {
    NoCacheRunner full = new NoCacheRunner(model("full,full,full"));
    List<NoCacheRunner> hybrids =
        List.of(
            new NoCacheRunner(model("full,swa:8,full")),
            new NoCacheRunner(model("full,recurrent,full")),
            new NoCacheRunner(model("swa:8,full,recurrent")));
    int rounds = 12;
    int[] differ = new int[hybrids.size()];
    for (int round = 0; round < rounds; round++) {
      int[] prompt = TinyPrompts.tokens(random, 60, 512);
      int[] reference = full.generate(prompt, 8);
      for (int h = 0; h < hybrids.size(); h++) {
        differ[h] += Arrays.equals(hybrids.get(h).generate(prompt, 8), reference) ? 0 : 1;
      }
    }
    // The same weights with another mixer in one layer: most outputs must change, or a layer
    // kind that the model ignored would pass every equality test below.
    for (int h = 0; h < hybrids.size(); h++) {
      assertThat(differ[h]).as("mix %d", h).isGreaterThan(rounds / 2);
    }
  }

  /**
   * Two layers of window 4 see 3 + 3 positions back: a change further back cannot reach any later
   * position's hidden state, so the generated tokens are the same; full attention sees it.
   */
  @Test
  void slidingWindowsSeeNoFurtherBackThanTheirSpan(Random random) {
    NoCacheRunner swa = new NoCacheRunner(model("swa:4,swa:4"));
    NoCacheRunner full = new NoCacheRunner(model("full,full"));
    int rounds = 20;
    int fullDiffers = 0;
    int lateDiffers = 0;
    for (int round = 0; round < rounds; round++) {
      int[] prompt = TinyPrompts.tokens(random, 40, 512);
      int[] early = prompt.clone();
      early[random.nextInt(10)] ^= 1 + random.nextInt(255);
      int[] late = prompt.clone();
      late[39 - random.nextInt(4)] ^= 1 + random.nextInt(255);
      int[] base = swa.generate(prompt, 8);
      assertThat(swa.generate(early, 8)).as("round %d", round).containsExactly(base);
      lateDiffers += Arrays.equals(swa.generate(late, 8), base) ? 0 : 1;
      fullDiffers += Arrays.equals(full.generate(early, 8), full.generate(prompt, 8)) ? 0 : 1;
    }
    assertThat(lateDiffers).as("a change within the windows matters").isGreaterThan(rounds / 2);
    assertThat(fullDiffers).as("full attention sees the early change").isPositive();
  }

  @ParameterizedTest
  @ValueSource(strings = {"full,swa:8,full", "full,recurrent,full", "swa:8,full,recurrent"})
  void theOutputIsDeterministicAndChunkingInvariant(String mix, Random random)
      throws InterruptedException {
    TinyTransformer model = model(mix);
    ForwardPass pass = model.newForwardPass();
    for (int round = 0; round < 8; round++) {
      int[] prompt = TinyPrompts.tokens(random, 2 + random.nextInt(120), 512);
      int whole =
          pass.forward(prompt, 0, prompt.length, new ArrayKv(model.config()), LayerGate.OPEN);
      ArrayKv kv = new ArrayKv(model.config());
      int from = 0;
      int next = -1;
      while (from < prompt.length) {
        int to = from + 1 + random.nextInt(prompt.length - from);
        next = pass.forward(prompt, from, to, kv, LayerGate.OPEN);
        from = to;
      }
      assertThat(next).as("prompt %s", Arrays.toString(prompt)).isEqualTo(whole);
      assertThat(new NoCacheRunner(model(mix)).generate(prompt, 6))
          .containsExactly(new NoCacheRunner(model).generate(prompt, 6));
    }
  }

  /**
   * A prompt whose KV is all there: the next token is recomputed reading the KV, and with a
   * recurrent layer the state is rebuilt over every position, writing nothing.
   */
  @ParameterizedTest
  @ValueSource(strings = {"full,swa:8,full", "full,recurrent,full"})
  void theTokenAfterACachedPromptIsTheReferenceOne(String mix, Random random)
      throws InterruptedException {
    TinyTransformer model = model(mix);
    ForwardPass pass = model.newForwardPass();
    for (int round = 0; round < 5; round++) {
      int[] prompt = TinyPrompts.tokens(random, 2 + random.nextInt(60), 512);
      ArrayKv kv = new ArrayKv(model.config());
      int expected = pass.forward(prompt, 0, prompt.length, kv, LayerGate.OPEN);
      assertThat(model.newForwardPass().nextAfterCached(prompt, prompt.length - 1, kv))
          .isEqualTo(expected);
    }
  }

  @Test
  void aRecurrentLayerRefusesToContinueFromAnotherPosition(Random random)
      throws InterruptedException {
    TinyTransformer model = model("full,recurrent,full");
    ForwardPass pass = model.newForwardPass();
    int[] prompt = TinyPrompts.tokens(random, 20, 512);
    ArrayKv kv = new ArrayKv(model.config());
    pass.forward(prompt, 0, 10, kv, LayerGate.OPEN);

    assertThatThrownBy(() -> pass.forward(prompt, 12, 20, kv, LayerGate.OPEN))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage(
            "recurrent layer 1 has taken in 10 positions but the step computes positions [12,"
                + " 20): the state would not be the one after the tokens before 12; resume from"
                + " a snapshot at 12 or recompute from position 0");
  }

  private static final AtomicInteger GROUPS = new AtomicInteger();

  /** Cache off: every request in a namespace of its own, so nothing is matched. */
  @ParameterizedTest
  @ValueSource(ints = {1, 2, 4})
  @Timeout(120)
  void everyRankCountGivesTheReferenceTokensWithTheCacheOff(int ranks, Random random)
      throws Exception {
    TinyTransformer model = model("swa:8,full,recurrent");
    ModelConfig m = model.config();
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(ranks)
            .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, 4)
            .devicePages(64)
            .hostPages(1)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(60))
            .build();
    List<Prompt> prompts =
        TinyPrompts.sharedPrefixes(
            random, 12, 3, 512, new int[] {8, 40}, new int[] {1, 12}, new int[] {1, 8});
    NoCacheRunner reference = new NoCacheRunner(model);
    EngineSettings settings =
        EngineSettings.DEFAULTS
            .withBatching(4, 16)
            .withPrefixCaching(false)
            .withQueueCapacity(64)
            .withGroup("hybrid-model-test-" + GROUPS.incrementAndGet());
    try (RankGroupEngine engine =
        GenerationEngines.open(model, config, settings, BackendMetrics.NOOP, RankSlot.Hooks.NONE)) {
      List<Collected> streams = new ArrayList<>();
      for (Prompt p : prompts) {
        Collected c = new Collected();
        engine.submit(new GenerationEngine.GenerationRequest(p.tokens(), p.maxTokens()), c);
        streams.add(c);
      }
      for (int i = 0; i < prompts.size(); i++) {
        Completion c = streams.get(i).get();
        assertThat(c.tokens())
            .as("request %d on %d ranks", i, ranks)
            .containsExactly(
                reference.generate(prompts.get(i).tokens(), prompts.get(i).maxTokens()));
        assertThat(c.matchedTokens()).isZero();
      }
    }
  }
}
