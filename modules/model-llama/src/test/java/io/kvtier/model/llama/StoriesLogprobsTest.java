package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.TokenLogprob;
import io.kvtier.serving.Completion;
import io.kvtier.serving.ModelEngine;
import io.kvtier.serving.ModelProvider;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SharedFiles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Log-probabilities of stories260K's tokens through the engine: each is the log-softmax of the
 * logits the runner produced at its position (the logits that StoriesServedTest and the exactness
 * tests hold to llama.cpp's), with the row's most likely tokens; asking for them changes no
 * token, greedy or sampled; a cached prompt reports the same bits as a cold one; the speculative
 * runner, whose verify pass computes several positions at once, reports what plain decoding
 * does; and two tensor-parallel ranks report what one does, within a sum's rounding.
 */
@Timeout(120)
class StoriesLogprobsTest {
  private static final int TOP = 5;
  private static final int TOKENS = 24;

  @Test
  void eachLogprobIsTheLogSoftmaxOfItsPositionsLogitsAndChangesNoToken() throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    Map<Integer, float[]> logits = new java.util.concurrent.ConcurrentHashMap<>();
    LogitsListener rank0 =
        (rank, id, position, row) -> {
          if (rank == 0) {
            logits.put(position, row.clone());
          }
        };
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      int[] prompt =
          model
              .text()
              .encode(
                  "Once upon a time, there was a little dog named Max."
                      + " He liked to run in the park.");
      Sampling sampled = new Sampling(0.9f, 0.95f, 0, 21);
      Completion greedy;
      Completion greedyCached;
      Completion plainSampled;
      Completion withLogprobs;
      try (ModelEngine engine =
          ModelEngine.open(
              model.withLogitsListener(rank0), config(model, 1), BackendMetrics.NOOP)) {
        greedy = engine.generate(prompt, TOKENS, Sampling.GREEDY.withLogprobs(TOP));
        // The logits the runner produced for each generated token, by the token's position.
        List<float[]> rows = new ArrayList<>();
        for (int i = 0; i < TOKENS; i++) {
          rows.add(logits.get(prompt.length + i - 1));
        }
        greedyCached = engine.generate(prompt, TOKENS, Sampling.GREEDY.withLogprobs(TOP));
        assertThat(greedyCached.cachedTokens())
            .as("the prompt's pages came from the cache")
            .isPositive();
        plainSampled = engine.generate(prompt, TOKENS, sampled);
        withLogprobs = engine.generate(prompt, TOKENS, sampled.withLogprobs(0));

        assertThat(greedy.tokens()).containsExactly(engine.generate(prompt, TOKENS).tokens());
        assertThat(greedy.logprobs()).hasSize(TOKENS);
        for (int i = 0; i < TOKENS; i++) {
          TokenLogprob lp = greedy.logprobs().get(i);
          float[] row = rows.get(i);
          assertThat(lp.token()).isEqualTo(greedy.tokens()[i]);
          assertThat((double) lp.logprob()).isCloseTo(logSoftmax(row, lp.token()), within(1e-5));
          assertThat(lp.topTokens()).containsExactly(top(row, TOP));
          assertThat(lp.topTokens()[0]).as("greedy takes the most likely").isEqualTo(lp.token());
          assertThat(lp.topLogprobs()[0]).isEqualTo(lp.logprob());
        }
      }
      assertThat(describe(greedyCached))
          .as("cold and cached, bit for bit")
          .isEqualTo(describe(greedy));
      assertThat(withLogprobs.tokens()).containsExactly(plainSampled.tokens());
      assertThat(withLogprobs.logprobs()).hasSize(TOKENS);
      assertThat(withLogprobs.logprobs().getFirst().topTokens()).isEmpty();
      assertThat(plainSampled.logprobs()).as("not asked, none").isEmpty();

      // The speculative runner (a copy of the last layer as the draft: every proposal kept).
      LlamaServingModel drafted = model.withDraftLayer(true, 3);
      try (ModelEngine engine =
          ModelEngine.open(drafted, config(drafted, 1), BackendMetrics.NOOP)) {
        Completion speculated = engine.generate(prompt, TOKENS, Sampling.GREEDY.withLogprobs(TOP));
        assertThat(speculated.tokens()).containsExactly(greedy.tokens());
        assertClose(speculated, greedy, 1e-5);
      }
      // Two tensor-parallel ranks: the same tokens, the sums in another order.
      try (ModelEngine engine = ModelEngine.open(model, config(model, 2), BackendMetrics.NOOP)) {
        Completion two = engine.generate(prompt, TOKENS, Sampling.GREEDY.withLogprobs(TOP));
        assertThat(two.tokens()).containsExactly(greedy.tokens());
        assertClose(two, greedy, 1e-4);
      }
    }
  }

  /**
   * A request's prompt log-probabilities (OpenAI's {@code echo} with {@code logprobs}): one per
   * prompt token after the first, each the log-softmax of a direct decode's logits at the position
   * before it (within the rounding of a batched prefill), with its most likely tokens; the request
   * matches nothing in the cache (a cached position has no logits) and still generates what plain
   * greedy does; two tensor-parallel ranks and a speculating runner report the same, and a
   * context-parallel engine rejects the request with its reason.
   */
  @Test
  void promptLogprobsAreEachPositionsLogSoftmaxAndSkipTheCache() throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      int[] prompt = model.text().encode("Once upon a time, there was a little dog named Max.");
      List<float[]> rows = new ArrayList<>();
      try (io.kvtier.gguf.GgufFile file = io.kvtier.gguf.GgufFile.open(path)) {
        LlamaModel direct = LlamaModel.of(file);
        KvStore kv = ArrayKvStore.forModel(direct);
        for (int i = 0; i + 1 < prompt.length; i++) {
          rows.add(direct.decode(prompt[i], i, kv));
        }
      }
      Sampling asking = Sampling.GREEDY.withLogprobs(TOP).withPromptLogprobs(true);
      Completion echoed;
      try (ModelEngine engine = ModelEngine.open(model, config(model, 1), BackendMetrics.NOOP)) {
        int[] plain = engine.generate(prompt, 4).tokens();
        echoed = engine.generate(prompt, 4, asking);
        assertThat(echoed.cachedTokens()).as("the cached prompt is not matched").isZero();
        assertThat(echoed.tokens()).containsExactly(plain);
        assertThat(engine.generate(prompt, 4).cachedTokens())
            .as("a plain request still matches the prompt")
            .isPositive();
        assertThat(engine.generate(prompt, 4, Sampling.GREEDY.withLogprobs(TOP)).promptLogprobs())
            .as("not asked, none")
            .isEmpty();
      }
      assertThat(echoed.promptLogprobs()).hasSize(prompt.length - 1);
      for (int i = 0; i + 1 < prompt.length; i++) {
        TokenLogprob lp = echoed.promptLogprobs().get(i);
        float[] row = rows.get(i);
        assertThat(lp.token()).isEqualTo(prompt[i + 1]);
        assertThat((double) lp.logprob())
            .as("prompt token %d", i + 1)
            .isCloseTo(logSoftmax(row, prompt[i + 1]), within(1e-4));
        assertThat(lp.topTokens()).hasSize(TOP);
        assertThat(lp.topTokens()[0]).isEqualTo(top(row, 1)[0]);
      }
      LlamaServingModel drafted = model.withDraftLayer(true, 3);
      for (int ranks = 1; ranks <= 2; ranks++) {
        for (LlamaServingModel served : List.of(model, drafted)) {
          try (ModelEngine engine =
              ModelEngine.open(served, config(served, ranks), BackendMetrics.NOOP)) {
            Completion other = engine.generate(prompt, 4, asking);
            assertThat(other.tokens()).containsExactly(echoed.tokens());
            for (int i = 0; i + 1 < prompt.length; i++) {
              assertThat(other.promptLogprobs().get(i).logprob())
                  .as("%d ranks, drafted %s, prompt token %d", ranks, served == drafted, i + 1)
                  .isCloseTo(echoed.promptLogprobs().get(i).logprob(), within(1e-4f));
            }
          }
        }
      }
      try (ModelEngine engine =
          ModelEngine.open(
              model,
              ServedTiers.builder(model, 2, Parallelism.cp(1), 16, 64, 256).build(),
              BackendMetrics.NOOP)) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> engine.generate(prompt, 4, asking))
            .hasMessageContaining("it asks for its prompt's log-probabilities")
            .hasMessageContaining("the model does not report them");
      }
    }
  }

  /** Sim pools of the model's layout (a draft's block too), {@code ranks} threads. */
  private static KvTierConfig config(LlamaServingModel model, int ranks) {
    return ServedTiers.builder(model, ranks, Parallelism.TP, 16, 64, 256).build();
  }

  private static double logSoftmax(float[] row, int token) {
    double max = Double.NEGATIVE_INFINITY;
    for (float l : row) {
      max = Math.max(max, l);
    }
    double sum = 0;
    for (float l : row) {
      sum += Math.exp(l - max);
    }
    return row[token] - max - Math.log(sum);
  }

  private static int[] top(float[] row, int k) {
    return IntStream.range(0, row.length)
        .boxed()
        .sorted(Comparator.comparingDouble((Integer i) -> -row[i]).thenComparingInt(i -> i))
        .limit(k)
        .mapToInt(Integer::intValue)
        .toArray();
  }

  /** Every reported value as bits, to compare two completions exactly. */
  private static List<String> describe(Completion c) {
    List<String> out = new ArrayList<>();
    for (TokenLogprob lp : c.logprobs()) {
      int[] bits = new int[lp.topLogprobs().length];
      for (int i = 0; i < bits.length; i++) {
        bits[i] = Float.floatToRawIntBits(lp.topLogprobs()[i]);
      }
      out.add(
          lp.token()
              + ":"
              + Float.floatToRawIntBits(lp.logprob())
              + Arrays.toString(lp.topTokens())
              + Arrays.toString(bits));
    }
    return out;
  }

  private static void assertClose(Completion actual, Completion expected, double tolerance) {
    assertThat(actual.logprobs()).hasSameSizeAs(expected.logprobs());
    for (int i = 0; i < expected.logprobs().size(); i++) {
      TokenLogprob a = actual.logprobs().get(i);
      TokenLogprob e = expected.logprobs().get(i);
      assertThat((double) a.logprob()).isCloseTo(e.logprob(), within(tolerance));
      assertThat(a.topTokens()).containsExactly(e.topTokens());
      for (int j = 0; j < e.topLogprobs().length; j++) {
        assertThat((double) a.topLogprobs()[j]).isCloseTo(e.topLogprobs()[j], within(tolerance));
      }
    }
  }
}
