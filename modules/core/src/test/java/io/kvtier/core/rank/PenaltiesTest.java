package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Penalties as vLLM applies them: the choice under penalties equals the plain choice over a row
 * penalized by a textbook reference (repetition over prompt and output, presence and frequency
 * over the output only), greedy and sampled; the model's row is left as it was, and the
 * log-probabilities are its own.
 */
class PenaltiesTest {

  /** The reference: the row with the penalties of the tokens before {@code position}. */
  private static float[] penalize(
      float[] row, int[] tokens, int promptLength, int position, Penalties p) {
    float[] out = row.clone();
    boolean[] seen = new boolean[row.length];
    for (int i = 0; i < position; i++) {
      seen[tokens[i]] = true;
    }
    for (int t = 0; t < row.length; t++) {
      if (seen[t]) {
        out[t] = out[t] > 0 ? out[t] / p.repetition() : out[t] * p.repetition();
      }
    }
    int[] counts = new int[row.length];
    for (int i = promptLength; i < position; i++) {
      counts[tokens[i]]++;
    }
    for (int t = 0; t < row.length; t++) {
      if (counts[t] > 0) {
        out[t] -= p.frequency() * counts[t] + p.presence();
      }
    }
    return out;
  }

  @Test
  void theChoiceIsThePlainChoiceOverTheReferencePenalizedRow() {
    SplittableRandom random = new SplittableRandom(11);
    for (int trial = 0; trial < 300; trial++) {
      int vocabulary = 2 + random.nextInt(60);
      float[] row = new float[vocabulary];
      for (int i = 0; i < vocabulary; i++) {
        row[i] = (float) random.nextGaussian() * 3;
      }
      int position = 1 + random.nextInt(40);
      int promptLength = random.nextInt(position + 1);
      int[] tokens = new int[position + 1];
      for (int i = 0; i < position; i++) {
        tokens[i] = random.nextInt(Math.min(vocabulary, 8)); // repeats are common
      }
      Penalties p =
          new Penalties(
              (float) (random.nextDouble() * 4 - 2),
              (float) (random.nextDouble() * 4 - 2),
              (float) (0.5 + random.nextDouble() * 1.5));
      Sampling sampling =
          (random.nextBoolean() ? Sampling.GREEDY : new Sampling(0.9f, 0.95f, 0, trial))
              .withPenalties(p)
              .withLogprobs(2);
      TokenLogprobs record = TokenLogprobs.of(2);
      ModelStep step =
          new ModelStep(
              7,
              0,
              tokens,
              position - 1,
              position,
              new int[8],
              new int[0],
              List.of(),
              sampling,
              record,
              promptLength);
      float[] before = row.clone();

      int chosen = Sampler.choose(row, 0, vocabulary, step, position);

      float[] reference = penalize(row, tokens, promptLength, position, p);
      assertThat(chosen)
          .as("trial %d", trial)
          .isEqualTo(Sampler.choose(reference, 0, vocabulary, sampling, position));
      assertThat(row).as("the model's row is untouched").containsExactly(before);
      TokenLogprobs raw = TokenLogprobs.of(2);
      raw.record(position, row, 0, vocabulary, chosen);
      assertThat(record.take(position).logprob())
          .as("log-probabilities of the raw row")
          .isEqualTo(raw.take(position).logprob());
    }
  }

  @Test
  void aFrequencyPenaltyTurnsGreedyAwayFromARepeatAndThePromptDoesNotCount() {
    float[] row = {0, 5, 4.5f};
    int[] tokens = {1, 1, 0, 0};
    Sampling greedy = Sampling.GREEDY.withPenalties(new Penalties(0, 1, 1));
    // Token 1 is in the prompt only (promptLength 2): no penalty, it stays the largest.
    assertThat(choose(row, tokens, 2, 3, greedy)).isEqualTo(1);
    // Generated once (promptLength 1): 5 - 1 < 4.5.
    assertThat(choose(row, tokens, 1, 3, greedy)).isEqualTo(2);
    // A repetition penalty counts the prompt too: 5 / 2 < 4.5.
    Sampling repeat = Sampling.GREEDY.withPenalties(new Penalties(0, 0, 2));
    assertThat(choose(row, tokens, 3, 3, repeat)).isEqualTo(2);
    float[] negative = {-1, -3, -2};
    // A negative seen logit is multiplied: token 0's -1 becomes -2 and ties unseen token 2 (the
    // lower id is taken on a tie); by 3 it becomes -3 and token 2 is taken.
    assertThat(choose(negative, new int[] {0, 0}, 1, 1, repeat)).isEqualTo(0);
    assertThat(
            choose(negative, new int[] {0, 0}, 1, 1, repeat.withPenalties(new Penalties(0, 0, 3))))
        .isEqualTo(2);
  }

  private static int choose(float[] row, int[] tokens, int promptLength, int position, Sampling s) {
    ModelStep step =
        new ModelStep(
            1,
            0,
            tokens,
            position - 1,
            position,
            new int[4],
            new int[0],
            List.of(),
            s,
            TokenLogprobs.NONE,
            promptLength);
    return Sampler.choose(Arrays.copyOf(row, row.length), 0, row.length, step, position);
  }

  @Test
  void outOfRangePenaltiesAreRefusedNamingTheField() {
    assertThatThrownBy(() -> new Penalties(2.5f, 0, 1)).hasMessageContaining("presence=2.5");
    assertThatThrownBy(() -> new Penalties(0, -2.5f, 1)).hasMessageContaining("frequency=-2.5");
    assertThatThrownBy(() -> new Penalties(0, 0, 0)).hasMessageContaining("repetition=0.0");
    assertThatThrownBy(() -> new Penalties(0, 0, Float.NaN)).hasMessageContaining("repetition=NaN");
    assertThat(Penalties.NONE.none()).isTrue();
    assertThat(new Penalties(0, 0, 1.01f).none()).isFalse();
  }
}
