package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A logit bias: added before the penalties (vLLM's order), greedy or sampled, leaving the model's
 * row and its log-probabilities as they were; compared by value; bad biases refused naming the
 * token.
 */
class LogitBiasTest {

  private static int choose(float[] row, Sampling s, TokenLogprobs record) {
    int[] tokens = {0, 0, 0};
    ModelStep step =
        new ModelStep(1, 0, tokens, 1, 2, new int[4], new int[0], List.of(), s, record, 1);
    return Sampler.choose(row, 0, row.length, step, 2);
  }

  @Test
  void aBiasMovesTheChoiceBeforeThePenaltiesAndLeavesTheRow() {
    float[] row = {3, 1, 2};
    float[] before = row.clone();
    assertThat(choose(row, Sampling.GREEDY, TokenLogprobs.NONE)).isZero();
    Sampling banned = Sampling.GREEDY.withLogitBias(LogitBias.of(Map.of(0, -100f)));
    assertThat(choose(row, banned, TokenLogprobs.NONE)).isEqualTo(2);
    Sampling forced = new Sampling(1, 1, 0, 5).withLogitBias(LogitBias.of(Map.of(1, 100f)));
    for (int seed = 0; seed < 20; seed++) {
      assertThat(choose(row, forced.withSeed(seed), TokenLogprobs.NONE)).isEqualTo(1);
    }
    // Token 0 is in the output (tokens[1], prompt length 1): biased to 4, a repetition penalty of
    // 2 then halves it to 2, below token 2's 2.5 after its own bias.
    Sampling both =
        Sampling.GREEDY
            .withLogitBias(LogitBias.of(Map.of(0, 1f, 2, 0.5f)))
            .withPenalties(new Penalties(0, 0, 2));
    assertThat(choose(row, both, TokenLogprobs.NONE)).isEqualTo(2);
    TokenLogprobs record = TokenLogprobs.of(1);
    choose(row, banned.withLogprobs(1), record);
    TokenLogprob lp = record.take(2);
    assertThat(lp.token()).isEqualTo(2);
    assertThat(lp.topTokens()).as("the model's own most likely").containsExactly(0);
    assertThat(row).containsExactly(before);
  }

  @Test
  void biasesAreValuesAndBadOnesAreRefused() {
    assertThat(LogitBias.of(Map.of(4, 1f, 2, -1f)))
        .isEqualTo(new LogitBias(new int[] {2, 4}, new float[] {-1, 1}))
        .hasSameHashCodeAs(new LogitBias(new int[] {2, 4}, new float[] {-1, 1}));
    assertThat(LogitBias.of(Map.of())).isSameAs(LogitBias.NONE);
    assertThat(LogitBias.NONE.largestToken()).isEqualTo(-1);
    assertThatThrownBy(() -> LogitBias.of(Map.of(3, 101f)))
        .hasMessageContaining("the bias of token 3 is 101.0: give -100 to 100");
    assertThatThrownBy(() -> LogitBias.of(Map.of(-1, 1f))).hasMessageContaining("token -1");
    assertThatThrownBy(() -> new LogitBias(new int[] {5, 5}, new float[] {1, 1}))
        .hasMessageContaining("ascending, distinct");
    assertThatThrownBy(() -> LogitBias.of(Map.of(1, Float.NaN))).hasMessageContaining("is NaN");
  }
}
