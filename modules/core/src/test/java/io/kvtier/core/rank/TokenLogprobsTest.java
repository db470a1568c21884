package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The log-probabilities a model records: the chosen token's equals the log-softmax of the row (a
 * plain reference in double), the most likely tokens are those of a full sort (the lower id first
 * on ties), a speculative step's positions are kept apart, and a request that did not ask records
 * nothing.
 */
class TokenLogprobsTest {

  /** log(softmax(row))[i] in double, the textbook way. */
  private static double reference(float[] row, int i) {
    double max = Double.NEGATIVE_INFINITY;
    for (float l : row) {
      max = Math.max(max, l);
    }
    double sum = 0;
    for (float l : row) {
      sum += Math.exp(l - max);
    }
    return row[i] - max - Math.log(sum);
  }

  @Test
  void theChosenTokenAndTheMostLikelyMatchASortedReference() {
    SplittableRandom random = new SplittableRandom(3);
    for (int trial = 0; trial < 200; trial++) {
      int length = 1 + random.nextInt(600);
      float[] logits = new float[length + 7];
      for (int i = 0; i < logits.length; i++) {
        // Few distinct values, so ties are common.
        logits[i] = random.nextInt(3) == 0 ? random.nextInt(5) : (float) random.nextGaussian() * 4;
      }
      int from = 7;
      float[] row = java.util.Arrays.copyOfRange(logits, from, from + length);
      int top = random.nextInt(Sampling.MAX_LOGPROBS + 1);
      int token = random.nextInt(length);
      TokenLogprobs record = TokenLogprobs.of(top);
      record.record(40 + trial, logits, from, length, token);
      TokenLogprob lp = record.take(40 + trial);

      assertThat(lp.token()).isEqualTo(token);
      assertThat((double) lp.logprob()).isCloseTo(reference(row, token), within(1e-5));
      int[] expected =
          IntStream.range(0, length)
              .boxed()
              .sorted(Comparator.comparingDouble((Integer i) -> -row[i]).thenComparingInt(i -> i))
              .limit(top)
              .mapToInt(Integer::intValue)
              .toArray();
      assertThat(lp.topTokens()).as("trial %d", trial).containsExactly(expected);
      for (int i = 0; i < expected.length; i++) {
        assertThat((double) lp.topLogprobs()[i])
            .isCloseTo(reference(row, expected[i]), within(1e-5));
      }
      assertThat(record.take(40 + trial)).as("taken once").isNull();
    }
  }

  @Test
  void positionsAreKeptApartAndNoneRecordsNothing() {
    float[] logits = {0, 1, 2, 3};
    TokenLogprobs record = TokenLogprobs.of(1);
    record.record(10, logits, 0, 4, 3);
    record.record(11, logits, 0, 4, 0);
    record.record(11, logits, 0, 4, 1); // a later step wrote position 11 again
    assertThat(record.take(11).token()).isEqualTo(1);
    assertThat(record.take(10).token()).isEqualTo(3);
    assertThat(record.take(12)).isNull();

    assertThat(TokenLogprobs.of(-1)).isSameAs(TokenLogprobs.NONE);
    TokenLogprobs.NONE.record(5, logits, 0, 4, 2);
    assertThat(TokenLogprobs.NONE.take(5)).isNull();
    assertThat(TokenLogprobs.NONE.wanted()).isFalse();
    assertThat(TokenLogprobs.of(0).wanted()).isTrue();
  }

  @Test
  void aRowThatIsNotFiniteOrABadCountIsRefused() {
    float[] logits = {0, Float.NaN, 2};
    assertThatThrownBy(() -> TokenLogprobs.of(2).record(7, logits, 0, 3, 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("position 7 are not all finite");
    assertThatThrownBy(() -> TokenLogprobs.of(Sampling.MAX_LOGPROBS + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 20");
    assertThatThrownBy(() -> new Sampling(0.5f, 1, 0, 1, 21))
        .hasMessageContaining("logprobs=21 must be -1 (none) or 0 to 20");
  }

  @Test
  void theStepOverloadChoosesAsTheSamplingOneAndRecords() {
    float[] logits = {0.5f, 2.5f, 1.0f, 2.5f};
    Sampling sampling = new Sampling(0.9f, 1, 0, 77).withLogprobs(2);
    TokenLogprobs record = TokenLogprobs.of(2);
    ModelStep step =
        new ModelStep(
            1, 0, new int[4], 0, 3, new int[1], new int[0], java.util.List.of(), sampling, record);
    int token = Sampler.choose(logits, 0, 4, step, 3);
    assertThat(token).isEqualTo(Sampler.choose(logits, 0, 4, sampling, 3));
    TokenLogprob lp = record.take(3);
    assertThat(lp.token()).isEqualTo(token);
    assertThat(lp.topTokens()).containsExactly(1, 3);
    assertThat(lp.topLogprobs()[0]).isEqualTo(lp.topLogprobs()[1]);
  }
}
