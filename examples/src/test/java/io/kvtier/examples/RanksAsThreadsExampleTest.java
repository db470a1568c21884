package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.examples.RanksAsThreadsExample.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class RanksAsThreadsExampleTest {

  @Test
  void threeRanksServeEveryRequestAsOneRankDoes() throws Exception {
    Result three = RanksAsThreadsExample.run(3);
    Result one = RanksAsThreadsExample.run(1);

    assertThat(three.stats().finished()).isEqualTo(RanksAsThreadsExample.REQUESTS);
    assertThat(three.outputs()).hasSize(RanksAsThreadsExample.REQUESTS).isEqualTo(one.outputs());
    // Each conversation's second turn extends its first: its prompt is found in the cache.
    assertThat(three.stats().deviceHitTokens() + three.stats().hostHitTokens()).isPositive();
    assertThat(three.stats().kvMismatches()).isZero();
  }
}
