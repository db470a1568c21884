package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.examples.RanksAsThreadsExample.RankResult;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class RanksAsThreadsExampleTest {

  @Test
  void everyRankServesEveryRequestAndEndsWithTheSameReplica() {
    List<RankResult> ranks = RanksAsThreadsExample.run(3);

    assertThat(ranks).extracting(RankResult::rank).containsExactly(0, 1, 2);
    RankResult first = ranks.get(0);
    assertThat(first.stats().finished()).isEqualTo(RanksAsThreadsExample.REQUESTS);
    // Each conversation's second turn extends its first: its prompt is found in the cache.
    assertThat(first.stats().deviceHitTokens() + first.stats().hostHitTokens()).isPositive();
    assertThat(ranks)
        .allSatisfy(
            r -> {
              assertThat(r.replicaDigest()).isEqualTo(first.replicaDigest());
              assertThat(r.outputs()).isEqualTo(first.outputs());
              assertThat(r.ticks()).isEqualTo(first.ticks());
              assertThat(r.stats().kvMismatches()).isZero();
            });
  }
}
