package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.LogitBias;
import io.kvtier.core.rank.Penalties;
import io.kvtier.core.rank.Sampling;
import io.kvtier.gguf.GgufFile;
import io.kvtier.serving.ModelEngine;
import io.kvtier.serving.ModelProvider;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SharedFiles;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Penalties through the engine on stories260K: greedy decoding under presence, frequency and
 * repetition penalties equals a direct decode ({@link LlamaModel}) that penalizes its logits the
 * textbook way, token for token, and differs from plain greedy (the story repeats itself less);
 * from the cache, with a draft that proposes without penalties, and on two ranks, the same tokens.
 * A logit bias bans or forces a token.
 */
@Timeout(120)
class StoriesPenaltiesTest {
  private static final int TOKENS = 48;
  private static final Penalties PENALTIES = new Penalties(0.5f, 0.7f, 1.3f);

  @Test
  void penalizedGreedyEqualsADirectDecodeThatPenalizesItsLogits() throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      int[] prompt =
          model.text().encode("Once upon a time, there was a little girl. She liked to play.");
      int[] reference;
      try (GgufFile file = GgufFile.open(path)) {
        reference = direct(LlamaModel.of(file), prompt);
      }
      Sampling penalized = Sampling.GREEDY.withPenalties(PENALTIES);
      try (ModelEngine engine = ModelEngine.open(model, config(model, 1), BackendMetrics.NOOP)) {
        int[] plain = engine.generate(prompt, TOKENS).tokens();
        int[] served = engine.generate(prompt, TOKENS, penalized).tokens();
        assertThat(served).containsExactly(reference);
        assertThat(served).isNotEqualTo(plain);
        assertThat(distinct(served))
            .as("penalties make the story repeat itself less")
            .isGreaterThan(distinct(plain));
        assertThat(engine.generate(prompt, TOKENS, penalized).tokens())
            .as("from the cache")
            .containsExactly(reference);
      }
      speculatedAndOnTwoRanks(
          model,
          prompt,
          TOKENS,
          penalized,
          reference,
          "speculated: the draft proposes without penalties, the target keeps what it would");
    }
  }

  /**
   * Asserts that an engine whose draft layer proposes tokens (a copy of the last layer) and an
   * engine on two ranks generate {@code reference} after {@code prompt} under {@code sampling}.
   */
  static void speculatedAndOnTwoRanks(
      LlamaServingModel model,
      int[] prompt,
      int tokens,
      Sampling sampling,
      int[] reference,
      String speculated)
      throws Exception {
    LlamaServingModel drafted = model.withDraftLayer(true, 3);
    try (ModelEngine engine = ModelEngine.open(drafted, config(drafted, 1), BackendMetrics.NOOP)) {
      assertThat(engine.generate(prompt, tokens, sampling).tokens())
          .as(speculated)
          .containsExactly(reference);
    }
    try (ModelEngine engine = ModelEngine.open(model, config(model, 2), BackendMetrics.NOOP)) {
      assertThat(engine.generate(prompt, tokens, sampling).tokens())
          .as("two ranks")
          .containsExactly(reference);
    }
  }

  /**
   * A logit bias: -100 on plain greedy's first token makes the first token the model's second
   * most likely (its own log-probabilities say which), and +100 on a token makes every token that
   * one, on one rank and on two.
   */
  @Test
  void aLogitBiasBansOrForcesATokenOnEveryRank() throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      int[] prompt = model.text().encode("Once upon a time");
      for (int ranks = 1; ranks <= 2; ranks++) {
        try (ModelEngine engine =
            ModelEngine.open(model, config(model, ranks), BackendMetrics.NOOP)) {
          io.kvtier.serving.Completion plain =
              engine.generate(prompt, 8, Sampling.GREEDY.withLogprobs(2));
          int first = plain.tokens()[0];
          int second = plain.logprobs().getFirst().topTokens()[1];
          int[] banned =
              engine
                  .generate(
                      prompt, 8, Sampling.GREEDY.withLogitBias(LogitBias.of(Map.of(first, -100f))))
                  .tokens();
          assertThat(banned[0]).as("%d ranks", ranks).isEqualTo(second);
          assertThat(java.util.Arrays.stream(banned)).doesNotContain(first);
          int[] forced =
              engine
                  .generate(
                      prompt,
                      8,
                      new Sampling(0.8f, 1, 0, 3).withLogitBias(LogitBias.of(Map.of(300, 100f))))
                  .tokens();
          assertThat(forced).containsOnly(300);
        }
      }
    }
  }

  /** Greedy decoding of {@code prompt} whose every row is penalized as vLLM does. */
  private static int[] direct(LlamaModel model, int[] prompt) {
    KvStore kv = ArrayKvStore.forModel(model);
    int[] tokens = new int[prompt.length + TOKENS];
    System.arraycopy(prompt, 0, tokens, 0, prompt.length);
    float[] logits = null;
    for (int i = 0; i < prompt.length; i++) {
      logits = model.decode(prompt[i], i, kv);
    }
    for (int g = 0; g < TOKENS; g++) {
      int position = prompt.length + g;
      float[] row = logits.clone();
      boolean[] seen = new boolean[row.length];
      int[] counts = new int[row.length];
      for (int i = 0; i < position; i++) {
        seen[tokens[i]] = true;
        if (i >= prompt.length) {
          counts[tokens[i]]++;
        }
      }
      for (int t = 0; t < row.length; t++) {
        if (seen[t]) {
          row[t] = row[t] > 0 ? row[t] / PENALTIES.repetition() : row[t] * PENALTIES.repetition();
        }
        if (counts[t] > 0) {
          row[t] -= PENALTIES.frequency() * counts[t] + PENALTIES.presence();
        }
      }
      int next = StoriesGreedyTest.argmax(row);
      tokens[position] = next;
      if (g + 1 < TOKENS) {
        logits = model.decode(next, position, kv);
      }
    }
    return java.util.Arrays.copyOfRange(tokens, prompt.length, tokens.length);
  }

  private static long distinct(int[] tokens) {
    return java.util.Arrays.stream(tokens).distinct().count();
  }

  static io.kvtier.core.config.KvTierConfig config(LlamaServingModel model, int ranks) {
    return ServedTiers.builder(model, ranks, Parallelism.TP, 16, 64, 256).build();
  }
}
