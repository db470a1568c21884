package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.SeedExtension;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
public class SplitMix64Test {

  @Test
  public void seedZeroGivesTheSpecifiedVectors() {
    SplitMix64 rng = new SplitMix64(0);

    assertThat(rng.nextLong()).isEqualTo(0xe220a8397b1dcdafL);
    assertThat(rng.nextLong()).isEqualTo(0x6e789e6aa1b965f4L);
    assertThat(rng.nextLong()).isEqualTo(0x06c45d188009454fL);
  }

  @Test
  public void baseSeedGivesTheSpecifiedUnsignedDecimals() {
    SplitMix64 rng = new SplitMix64(20250101L);

    assertThat(Long.toUnsignedString(rng.nextLong())).isEqualTo("12408260688627086601");
    assertThat(Long.toUnsignedString(rng.nextLong())).isEqualTo("4115007536026216071");
    assertThat(Long.toUnsignedString(rng.nextLong())).isEqualTo("13704394098858994160");
  }

  @Test
  public void tokensAreUnsignedRemaindersOfTheNextValues() {
    // 0xe220a8397b1dcdaf is negative as a signed long: a signed remainder would be negative
    SplitMix64 a = new SplitMix64(0);
    SplitMix64 b = new SplitMix64(0);

    int[] tokens = a.tokens(3, 32000);

    for (int t : tokens) {
      assertThat(t).isEqualTo((int) Long.remainderUnsigned(b.nextLong(), 32000));
    }
    assertThat(tokens[0]).isBetween(0, 31999);
  }

  @Test
  public void shuffleDrawsOneSwapIndexPerPositionFromTheEnd() {
    int[] a = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    int[] expected = a.clone();
    SplitMix64 draws = new SplitMix64(7);
    for (int i = expected.length - 1; i >= 1; i--) {
      int j = (int) Long.remainderUnsigned(draws.nextLong(), i + 1);
      int t = expected[i];
      expected[i] = expected[j];
      expected[j] = t;
    }

    SplitMix64 rng = new SplitMix64(7);
    rng.shuffle(a);

    assertThat(a).containsExactly(expected);
    // and it consumed exactly length - 1 values
    assertThat(rng.nextLong()).isEqualTo(draws.nextLong());
  }

  @Test
  public void shuffleIsAPermutation(Random random) {
    int[] a = new int[1 + random.nextInt(500)];
    Arrays.setAll(a, i -> i);

    new SplitMix64(random.nextLong()).shuffle(a);

    int[] sorted = a.clone();
    Arrays.sort(sorted);
    for (int i = 0; i < sorted.length; i++) {
      assertThat(sorted[i]).isEqualTo(i);
    }
  }

  @Test
  public void nextDoubleStaysInTheUnitInterval(Random random) {
    SplitMix64 rng = new SplitMix64(random.nextLong());
    for (int i = 0; i < 10_000; i++) {
      assertThat(rng.nextDouble()).isGreaterThanOrEqualTo(0.0).isLessThan(1.0);
    }
  }

  @Test
  public void forkIsDeterministicAndDiffersFromTheParent(Random random) {
    long seed = random.nextLong();
    SplitMix64 a = new SplitMix64(seed);
    SplitMix64 b = new SplitMix64(seed);

    SplitMix64 forkA = a.fork();
    SplitMix64 forkB = b.fork();

    assertThat(forkA.nextLong()).isEqualTo(forkB.nextLong());
    assertThat(a.nextLong()).isEqualTo(b.nextLong());
    assertThat(new SplitMix64(seed).tokens(16, 32000))
        .isNotEqualTo(new SplitMix64(seed).fork().tokens(16, 32000));
  }

  @Test
  public void badBoundsAreRejected() {
    SplitMix64 rng = new SplitMix64(1);

    assertThatThrownBy(() -> rng.nextInt(0)).hasMessage("bound=0 must be >= 1");
    assertThatThrownBy(() -> rng.tokens(-1, 10)).hasMessage("count=-1 must be >= 0");
    assertThatThrownBy(() -> rng.tokens(1, 0)).hasMessage("vocab=0 must be >= 1");
  }
}
