package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.TestSeeds;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The sampler against a plain reference (sort the whole row, cut top-k, cut the nucleus, walk
 * the cumulative weights), the draws' statistics, and its determinism.
 */
class SamplerTest {

  @Test
  void greedyIsTheLargestLogitWithTiesToTheLowestId() {
    float[] logits = {1, 3, 3, 2};
    assertThat(Sampler.choose(logits, 0, 4, Sampling.GREEDY, 7)).isEqualTo(1);
    // topK 1 is greedy at any temperature; an offset row reads its own logits.
    assertThat(Sampler.choose(logits, 0, 4, new Sampling(2, 1, 1, 5), 7)).isEqualTo(1);
    float[] two = {0, 0, 9, 1, 5, 5};
    assertThat(Sampler.choose(two, 3, 3, Sampling.GREEDY, 0)).isEqualTo(1);
  }

  @Test
  void theChoiceIsTheReferencesForRandomRowsAndSettings() {
    TestSeeds.run(
        seed -> {
          Random rnd = new Random(seed);
          for (int trial = 0; trial < TestSeeds.scaled(300); trial++) {
            int vocab = 1 + rnd.nextInt(rnd.nextBoolean() ? 8 : 5000);
            float[] logits = new float[vocab + 3];
            float spread = rnd.nextBoolean() ? 2 : 40;
            for (int i = 0; i < logits.length; i++) {
              // Repeated values make ties; wide spreads leave few tokens above the pre-filters.
              logits[i] = rnd.nextInt(4) == 0 ? 1f : (float) (rnd.nextGaussian() * spread);
            }
            float temperature = rnd.nextBoolean() ? 1 : 0.05f + rnd.nextFloat() * 1.95f;
            float topP = rnd.nextInt(3) == 0 ? 1 : 0.01f + rnd.nextFloat() * 0.99f;
            int topK = rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(Math.max(1, vocab));
            Sampling s = new Sampling(temperature, topP, topK, rnd.nextLong());
            int position = rnd.nextInt(10_000);
            assertThat(Sampler.choose(logits, 3, vocab, s, position))
                .as("%s at %d over %d tokens", s, position, vocab)
                .isEqualTo(reference(logits, 3, vocab, s, position));
          }
        });
  }

  @Test
  void aNucleusDeepInAFlatTailIsFoundAmongTheLightTokens() {
    // One likely token and 100,000 at e^-10 each: half the mass needs about 39,000 of the tail,
    // so the nucleus holds tokens that weigh 1/22,000 of the likely one.
    float[] logits = new float[100_001];
    Arrays.fill(logits, -10);
    logits[50_000] = 0;
    Sampling s = new Sampling(1, 0.5f, 0, 11);
    int tail = 0;
    for (int p = 0; p < 200; p++) {
      int token = Sampler.choose(logits, 0, logits.length, s, p);
      assertThat(token).isEqualTo(reference(logits, 0, logits.length, s, p));
      tail += token != 50_000 ? 1 : 0;
    }
    // The likely token holds 1 / 5.54 of the whole; within the nucleus (half), about 36%.
    assertThat(tail).isBetween(100, 160);
  }

  @Test
  void drawsFollowTheSoftmaxAndTheFilters() {
    float[] logits = {2, 1, 0, -1};
    int[] all = counts(logits, new Sampling(1, 1, 0, 42));
    double[] p = softmax(logits, 1);
    for (int t = 0; t < 4; t++) {
      assertThat(all[t] / 20_000.0).as("token %d", t).isCloseTo(p[t], within(0.015));
    }
    // Top-k 2 renormalises the first two; top-p 0.7 keeps the first two too (0.64, then 0.88).
    for (Sampling s : new Sampling[] {new Sampling(1, 1, 2, 42), new Sampling(1, 0.7f, 0, 42)}) {
      int[] c = counts(logits, s);
      assertThat(c[2] + c[3]).as("%s", s).isZero();
      assertThat(c[0] / 20_000.0).as("%s", s).isCloseTo(p[0] / (p[0] + p[1]), within(0.015));
    }
    // A low temperature sharpens, a high one flattens.
    assertThat(counts(logits, new Sampling(0.1f, 1, 0, 42))[0]).isGreaterThan(19_900);
    assertThat(counts(logits, new Sampling(2, 1, 0, 42))[3]).isGreaterThan(1_500);
  }

  @Test
  void theSameSeedAndPositionGiveTheSameTokenAndOthersVary() {
    float[] logits = new float[50];
    Sampling a = new Sampling(1, 1, 0, 1);
    int[] first = IntStream.range(0, 64).map(p -> Sampler.choose(logits, 0, 50, a, p)).toArray();
    int[] again = IntStream.range(0, 64).map(p -> Sampler.choose(logits, 0, 50, a, p)).toArray();
    int[] other =
        IntStream.range(0, 64)
            .map(p -> Sampler.choose(logits, 0, 50, new Sampling(1, 1, 0, 2), p))
            .toArray();
    assertThat(again).isEqualTo(first);
    assertThat(other).isNotEqualTo(first);
    assertThat(Arrays.stream(first).distinct().count()).isGreaterThan(20);
  }

  @Test
  void badSettingsAndRowsAreRefusedNamingTheValue() {
    assertThatThrownBy(() -> new Sampling(-1, 1, 0, 0)).hasMessageContaining("temperature=-1.0");
    assertThatThrownBy(() -> new Sampling(Float.NaN, 1, 0, 0)).hasMessageContaining("NaN");
    assertThatThrownBy(() -> new Sampling(Float.POSITIVE_INFINITY, 1, 0, 0))
        .hasMessageContaining("Infinity");
    assertThatThrownBy(() -> new Sampling(1, 0, 0, 0)).hasMessageContaining("topP=0.0");
    assertThatThrownBy(() -> new Sampling(1, 1.5f, 0, 0)).hasMessageContaining("topP=1.5");
    assertThatThrownBy(() -> new Sampling(1, 1, -1, 0)).hasMessageContaining("topK=-1");
    assertThatThrownBy(() -> Sampler.choose(new float[3], 1, 3, Sampling.GREEDY, 0))
        .hasMessageContaining("from=1 length=3 capacity=3");
    float[] nan = {0, Float.NaN, 1};
    assertThatThrownBy(() -> Sampler.choose(nan, 0, 3, new Sampling(1, 1, 0, 0), 0))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("NaN or infinite");
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }

  private static int[] counts(float[] logits, Sampling s) {
    int[] c = new int[logits.length];
    for (int p = 0; p < 20_000; p++) {
      c[Sampler.choose(logits, 0, logits.length, s, p)]++;
    }
    return c;
  }

  private static double[] softmax(float[] logits, double t) {
    double[] w = new double[logits.length];
    double sum = 0;
    for (int i = 0; i < w.length; i++) {
      w[i] = Math.exp(logits[i] / t);
      sum += w[i];
    }
    for (int i = 0; i < w.length; i++) {
      w[i] /= sum;
    }
    return w;
  }

  /**
   * The plain definition: every token sorted (logit, then id), the first k kept, then the fewest
   * of those in that order whose weight reaches top-p of theirs; the draw walks the kept tokens in
   * id order.
   */
  private static int reference(float[] logits, int from, int length, Sampling s, int position) {
    if (s.greedy()) {
      return Sampler.argmax(logits, from, length);
    }
    float max = logits[from + Sampler.argmax(logits, from, length)];
    double[] w = new double[length];
    double total = 0;
    for (int i = 0; i < length; i++) {
      w[i] = Math.exp((logits[from + i] - max) / (double) s.temperature());
      total += w[i];
    }
    double u = Sampler.draw(s.seed(), position);
    int k = s.topK() == 0 ? length : Math.min(s.topK(), length);
    Integer[] order = IntStream.range(0, length).boxed().toArray(Integer[]::new);
    Arrays.sort(
        order,
        Comparator.<Integer>comparingDouble(i -> -logits[from + i]).thenComparingInt(i -> i));
    boolean[] kept = new boolean[length];
    for (int i = 0; i < k; i++) {
      kept[order[i]] = true;
    }
    double base = k < length ? keptSum(w, kept) : total;
    if (s.topP() < 1) {
      double sum = 0;
      int n = k;
      for (int i = 0; i < k; i++) {
        sum += w[order[i]];
        if (sum >= s.topP() * base) {
          n = i + 1;
          break;
        }
      }
      Arrays.fill(kept, false);
      for (int i = 0; i < n; i++) {
        kept[order[i]] = true;
      }
      base = keptSum(w, kept);
    }
    double sum = 0;
    int last = 0;
    for (int i = 0; i < length; i++) {
      if (kept[i]) {
        sum += w[i];
        last = w[i] > 0 ? i : last;
        if (sum > u * base) {
          return i;
        }
      }
    }
    return last;
  }

  private static double keptSum(double[] w, boolean[] kept) {
    double sum = 0;
    for (int i = 0; i < w.length; i++) {
      sum += kept[i] ? w[i] : 0;
    }
    return sum;
  }
}
