package io.kvtier.collective.hazelcast;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.testkit.conformance.CollectiveConformanceSuite;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The collective suite on 3 embedded members of one JVM (loopback). Starting members per check
 * would take seconds each, so the checks share one cluster and rank {@code r} runs on member
 * {@code r % 3}; every check uses its own group, hence its own cluster objects.
 */
class HazelcastCollectiveConformanceTest extends CollectiveConformanceSuite {

  private static HazelcastTestCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = HazelcastTestCluster.start(3, Map.of());
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Override
  protected CollectiveProvider provider() {
    return new HazelcastCollectiveProvider();
  }

  @Override
  protected Collective join(String group, int size, int rank, Duration watchdog) {
    return HazelcastCollectives.join(
        cluster.member(rank % 3), CollectiveSpec.of(group, size, rank, watchdog));
  }
}
