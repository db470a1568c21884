package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.hazelcast.core.HazelcastInstance;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import io.kvtier.spi.TimeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The provider's own path: each rank starts its embedded member from {@code hazelcast.*}
 * properties. Two ranks are fewer than the 3 CP members, so a plain {@link
 * HazelcastCpMemberMain} member completes the CP subsystem, as the README tells users to do.
 */
class HazelcastEmbeddedProviderTest {

  @Test
  @Timeout(120)
  void twoRanksAndOneCpMemberFormAGroup() throws Exception {
    HazelcastTestCluster.quietLogs();
    HazelcastConfig base = HazelcastTestCluster.testConfig(3, Map.of());
    String members =
        "127.0.0.1:"
            + base.port()
            + ",127.0.0.1:"
            + (base.port() + 1)
            + ",127.0.0.1:"
            + (base.port() + 2);
    HazelcastInstance cpMember = HazelcastCpMemberMain.start(memberConfig(base, members, 2));
    try {
      List<CompletableFuture<long[]>> ranks = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        int rank = r;
        BackendContext context = context(memberConfig(base, members, rank), rank);
        ranks.add(
            HazelcastTestCluster.inThread(
                () -> {
                  try (Collective c =
                      new HazelcastCollectiveProvider()
                          .join(
                              CollectiveSpec.of("embedded", 2, rank, Duration.ofSeconds(30)),
                              context)) {
                    long[] sum = c.allReduce(ReduceOp.SUM, new long[] {rank + 1, 10}, "sum");
                    byte[] got = c.broadcast(1, rank == 1 ? new byte[] {4, 2} : null, "bcast");
                    c.barrier("end");
                    return new long[] {sum[0], sum[1], got[0], got[1]};
                  }
                }));
      }
      for (CompletableFuture<long[]> rank : ranks) {
        assertThat(rank.get(100, TimeUnit.SECONDS)).containsExactly(3, 20, 4, 2);
      }
    } finally {
      cpMember.getLifecycleService().terminate();
    }
  }

  @Test
  @Timeout(60)
  void tooFewCpMembersTimeOutSayingHowToAddOne() {
    HazelcastTestCluster.quietLogs();
    HazelcastConfig alone =
        HazelcastTestCluster.testConfig(1, Map.of()).with(HazelcastConfig.JOIN_TIMEOUT, "3s");
    assertThatThrownBy(
            () ->
                new HazelcastCollectiveProvider()
                    .join(
                        CollectiveSpec.of("alone", 1, 0, Duration.ofSeconds(5)), context(alone, 0)))
        .isInstanceOf(CollectiveTimeoutException.class)
        .hasMessageContaining("needs 3 CP members")
        .hasMessageContaining("cp-member");
  }

  @Test
  void cpMemberCountZeroIsRefusedByTheCollective() {
    HazelcastConfig noCp = HazelcastConfig.DEFAULTS.with(HazelcastConfig.CP_MEMBER_COUNT, "0");
    assertThatThrownBy(
            () ->
                new HazelcastCollectiveProvider()
                    .join(
                        CollectiveSpec.of("no-cp", 1, 0, Duration.ofSeconds(5)), context(noCp, 0)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hazelcast.cp-member-count=0");
  }

  @Test
  void groupNamesWithAtAreRefused() {
    assertThatThrownBy(
            () ->
                new HazelcastCollectiveProvider()
                    .join(
                        CollectiveSpec.of("a@b", 1, 0, Duration.ofSeconds(5)),
                        context(HazelcastConfig.DEFAULTS, 0)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'@'");
  }

  @Test
  void cpMemberArgumentsAreHazelcastKeys() {
    assertThat(
            HazelcastCpMemberMain.parse(
                    new String[] {"--hazelcast.port=6001", "hazelcast.cluster-name=x"})
                .port())
        .isEqualTo(6001);
    assertThatThrownBy(() -> HazelcastCpMemberMain.parse(new String[] {"port=6001"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hazelcast.KEY");
    assertThatThrownBy(() -> HazelcastCpMemberMain.parse(new String[] {"hazelcast.mode=client"}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("always embedded");
  }

  /** Member {@code index}'s settings: its own port, the three addresses to join. */
  private static HazelcastConfig memberConfig(HazelcastConfig base, String members, int index) {
    return base.with(HazelcastConfig.PORT, Integer.toString(base.port() + index))
        .with(HazelcastConfig.PORT_COUNT, "1")
        .with(HazelcastConfig.MEMBERS, members);
  }

  private static BackendContext context(HazelcastConfig config, int rank) {
    return new BackendContext(rank, config.toProperties(), TimeSource.SYSTEM, BackendMetrics.NOOP);
  }
}
