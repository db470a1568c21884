package io.kvtier.simulator.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.SeedExtension;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
public class SharedPrefixWorkloadTest {

  private static SharedPrefixWorkload small(long seed, double alpha, double rate) {
    return new SharedPrefixWorkload(8, alpha, 40, 8, 300, 16, rate, seed, 500);
  }

  @Test
  public void theSameSeedGivesTheSameRequests(Random random) {
    long seed = random.nextLong();

    assertThat(small(seed, 1.0, 5).requests().toList())
        .isEqualTo(small(seed, 1.0, 5).requests().toList())
        .isNotEqualTo(small(seed + 1, 1.0, 5).requests().toList());
  }

  @Test
  public void requestsOfAGroupShareExactlyItsSystemPrompt(Random random) {
    List<Request> requests = small(random.nextLong(), 0.8, 0).requests().toList();
    Map<String, int[]> system = new HashMap<>();

    assertThat(requests).hasSize(300);
    for (Request r : requests) {
      assertThat(r.promptLength()).isEqualTo(48);
      assertThat(r.maxOutputTokens()).isEqualTo(16);
      assertThat(r.arrivalMillis()).isZero();
      int[] s = Arrays.copyOf(r.prompt(), 40);
      int[] seen = system.putIfAbsent(r.contextId().orElseThrow(), s);
      if (seen != null) {
        assertThat(s).isEqualTo(seen);
      }
      for (int t : r.prompt()) {
        assertThat(t).isBetween(0, 499);
      }
    }
    assertThat(system.keySet()).allMatch(g -> g.matches("group-[0-7]"));
  }

  @Test
  public void groupPopularityFollowsZipf(Random random) {
    int n = 20_000;
    SharedPrefixWorkload w = new SharedPrefixWorkload(4, 1.0, 1, 1, n, 0, 0, random.nextLong(), 10);
    Map<String, Integer> counts = new HashMap<>();
    w.requests().forEach(r -> counts.merge(r.contextId().orElseThrow(), 1, Integer::sum));

    // weights 1, 1/2, 1/3, 1/4 over their sum 25/12; five binomial standard deviations of slack
    // make a false failure practically impossible
    double[] expected = {12 / 25.0, 6 / 25.0, 4 / 25.0, 3 / 25.0};
    for (int g = 0; g < 4; g++) {
      double p = expected[g];
      double slack = 5 * Math.sqrt(n * p * (1 - p));
      assertThat((double) counts.getOrDefault("group-" + g, 0))
          .as("requests of group %d", g)
          .isBetween(n * p - slack, n * p + slack);
    }
  }

  @Test
  public void poissonArrivalsAreOrderedWithTheRequestedMeanAndDoNotChangePrompts(Random random) {
    long seed = random.nextLong();
    List<Request> timed = small(seed, 1.0, 50).requests().toList();
    List<Request> batch = small(seed, 1.0, 0).requests().toList();

    for (int i = 0; i < timed.size(); i++) {
      assertThat(timed.get(i).prompt()).isEqualTo(batch.get(i).prompt());
      if (i > 0) {
        assertThat(timed.get(i).arrivalMillis())
            .isGreaterThanOrEqualTo(timed.get(i - 1).arrivalMillis());
      }
    }
    // 300 gaps of mean 20 ms: the total is 6000 ms with a standard deviation of ~346 ms
    assertThat(timed.getLast().arrivalMillis()).isBetween(6000L - 5 * 346, 6000L + 5 * 346);
  }

  @Test
  public void specRoundTripsAndDefaultsAreTheDocumentedOnes() {
    SharedPrefixWorkload w = small(3, 0.5, 2.5);

    assertThat(Workloads.parse(w.spec())).isEqualTo(w);
    assertThat(Workloads.parse("shared-prefix")).isEqualTo(SharedPrefixWorkload.DEFAULTS);
    assertThat(SharedPrefixWorkload.DEFAULTS)
        .extracting(
            SharedPrefixWorkload::groups,
            SharedPrefixWorkload::alpha,
            SharedPrefixWorkload::systemTokens,
            SharedPrefixWorkload::questionTokens,
            SharedPrefixWorkload::requestCount)
        .containsExactly(64, 1.0, 2048, 128, 1024);
  }

  @Test
  public void rejectsBadParameters() {
    assertThatThrownBy(() -> new SharedPrefixWorkload(0, 1, 1, 1, 1, 1, 0, 1, 10))
        .hasMessage("groups=0 must be >= 1");
    assertThatThrownBy(() -> new SharedPrefixWorkload(1, -1, 1, 1, 1, 1, 0, 1, 10))
        .hasMessage("alpha=-1.0 must be a finite number >= 0.0");
    assertThatThrownBy(() -> new SharedPrefixWorkload(1, 1, 0, 0, 1, 1, 0, 1, 10))
        .hasMessageContaining("system=0 + question=0 must be between 1 and");
  }
}
