package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Held-back tokens (vLLM's {@code min_tokens}): never chosen while the request has generated
 * fewer than the count, greedy or sampled, after the logit bias; chosen as usual from the count
 * on; the model's row and log-probabilities left as they were; compared by value; bad rules
 * refused.
 */
class MinTokensTest {
  private static final int PROMPT = 2;

  /** The choice of the token at generated index {@code generated} (prompt of 2 tokens). */
  private static int choose(float[] row, Sampling s, int generated, TokenLogprobs record) {
    int[] tokens = new int[PROMPT + generated];
    ModelStep step =
        new ModelStep(
            1,
            0,
            tokens,
            tokens.length - 1,
            tokens.length,
            new int[4],
            new int[0],
            List.of(),
            s,
            record,
            PROMPT);
    return Sampler.choose(row, 0, row.length, step, PROMPT + generated);
  }

  @Test
  void heldBackTokensAreNeverChosenBeforeTheCountAndChosenAfter() {
    float[] row = {1, 5, 4, 2};
    float[] before = row.clone();
    Sampling held = Sampling.GREEDY.withMinTokens(MinTokens.of(3, Set.of(1)));
    for (int generated = 0; generated < 3; generated++) {
      assertThat(choose(row, held, generated, TokenLogprobs.NONE))
          .as("generated %d", generated)
          .isEqualTo(2);
    }
    assertThat(choose(row, held, 3, TokenLogprobs.NONE)).isEqualTo(1);
    assertThat(choose(row, held, 7, TokenLogprobs.NONE)).isEqualTo(1);
    // Sampled: a token 100 logits above the rest is still never drawn while held back.
    float[] peaked = {0, 100, 0, 0};
    Sampling sampled = new Sampling(1, 1, 0, 0).withMinTokens(MinTokens.of(2, Set.of(1)));
    for (int seed = 0; seed < 50; seed++) {
      assertThat(choose(peaked, sampled.withSeed(seed), 1, TokenLogprobs.NONE)).isNotEqualTo(1);
      assertThat(choose(peaked, sampled.withSeed(seed), 2, TokenLogprobs.NONE)).isEqualTo(1);
    }
    // With top-k and top-p too, and no bias lifts the ban.
    Sampling filtered =
        new Sampling(0.7f, 0.9f, 2, 3)
            .withLogitBias(LogitBias.of(java.util.Map.of(1, 100f)))
            .withMinTokens(MinTokens.of(1, Set.of(1)));
    for (int seed = 0; seed < 50; seed++) {
      assertThat(choose(row, filtered.withSeed(seed), 0, TokenLogprobs.NONE)).isNotEqualTo(1);
    }
    TokenLogprobs record = TokenLogprobs.of(1);
    choose(row, held.withLogprobs(1), 0, record);
    TokenLogprob lp = record.take(PROMPT);
    assertThat(lp.token()).isEqualTo(2);
    assertThat(lp.topTokens()).as("the model's own most likely").containsExactly(1);
    assertThat(row).containsExactly(before);
  }

  @Test
  void rulesAreValuesAndBadOnesAreRefused() {
    assertThat(MinTokens.of(4, List.of(9, 2, 9)))
        .isEqualTo(new MinTokens(4, new int[] {2, 9}))
        .hasSameHashCodeAs(new MinTokens(4, new int[] {2, 9}));
    assertThat(MinTokens.of(0, Set.of(2))).isEqualTo(MinTokens.NONE);
    assertThat(MinTokens.of(3, Set.of())).isEqualTo(MinTokens.NONE);
    assertThat(new MinTokens(3, new int[0]).none()).isTrue();
    assertThat(MinTokens.NONE.largestToken()).isEqualTo(-1);
    assertThat(MinTokens.of(4, List.of(9, 2)).largestToken()).isEqualTo(9);
    assertThat(Sampling.GREEDY.withMinTokens(MinTokens.of(0, Set.of(2))))
        .isEqualTo(Sampling.GREEDY);
    assertThat(Sampling.GREEDY.withMinTokens(MinTokens.of(1, Set.of(2))).adjustsLogits()).isTrue();
    assertThatThrownBy(() -> new MinTokens(-1, new int[] {2}))
        .hasMessageContaining("count=-1 must be at least 0");
    assertThatThrownBy(() -> new MinTokens(2, new int[] {3, 3}))
        .hasMessageContaining("ascending, distinct");
    assertThatThrownBy(() -> MinTokens.of(2, List.of(-4))).hasMessageContaining("token -4");
    assertThatThrownBy(
            () ->
                new MinTokens(
                    2, java.util.stream.IntStream.range(0, MinTokens.MAX_TOKENS + 1).toArray()))
        .hasMessageContaining("2049 held-back tokens: at most 2048");
  }
}
