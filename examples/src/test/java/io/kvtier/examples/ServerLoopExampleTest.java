package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.rank.RankEngineStats;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class ServerLoopExampleTest {

  @Test
  void threeClientsAreServedAndTheLaterOnesReuseTheSharedSystemPrompt() throws Exception {
    ServerLoopExample.Result result = ServerLoopExample.run();

    assertThat(result.outputs()).containsOnlyKeys(0, 1, 2);
    assertThat(result.outputs().values()).allSatisfy(tokens -> assertThat(tokens).hasSize(4));
    RankEngineStats stats = result.stats();
    assertThat(stats.finished()).isEqualTo(3);
    // 32 shared tokens = 8 pages of 4, found on the device by the second and the third client.
    assertThat(stats.deviceHitTokens()).isEqualTo(64);
  }

  @Test
  void aClientOnAnyThreadGetsItsTokensAndNothingIsAcceptedAfterStop() throws Exception {
    try (ServerLoopExample server = new ServerLoopExample(RankLoop.config(Map.of()))) {
      List<Integer> tokens = server.submit(new int[] {5, 6, 7, 8, 9}, 3).get(1, TimeUnit.MINUTES);
      assertThat(tokens).hasSize(3);
      assertThat(server.stop().finished()).isEqualTo(1);
      assertThatThrownBy(() -> server.submit(new int[] {1}, 1))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("the server is stopping");
    }
  }

  @Test
  void moreThanOneRankIsRefusedWithWhereToGoInstead() {
    assertThatThrownBy(() -> new ServerLoopExample(RankLoop.config(Map.of(KvTierKeys.RANKS, "2"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.ranks=2")
        .hasMessageContaining("RanksAsThreadsExample");
  }
}
