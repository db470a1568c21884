package io.kvtier.route;

import static io.kvtier.route.RouteTesting.PAGE;
import static io.kvtier.route.RouteTesting.options;
import static io.kvtier.route.RouteTesting.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.kvtier.core.cache.CacheMedium;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Several routers share one index through Hazelcast: replicas publish their KV events to
 * ringbuffers of one cluster, and every router reads them all, so the routers' indexes hold the
 * same blocks and route a prompt to the same replica.
 */
class HazelcastSharedIndexTest {
  private static final String CLUSTER = "kvtier-route-test-" + ProcessHandle.current().pid();
  private static HazelcastInstance member;

  private final List<FakeReplica> replicas = new ArrayList<>();
  private final List<KvRouter> routers = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void startMember() throws Exception {
    Config config = new Config();
    config.setClusterName(CLUSTER);
    config.setProperty("hazelcast.phone.home.enabled", "false");
    config.setProperty("hazelcast.wait.seconds.before.join", "0");
    config.getJetConfig().setEnabled(false);
    int port;
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      port = s.getLocalPort();
    }
    config.getNetworkConfig().setPort(port).setPortAutoIncrement(true).setPortCount(50);
    config.getNetworkConfig().getInterfaces().setEnabled(true).addInterface("127.0.0.1");
    config.setProperty("hazelcast.socket.bind.any", "false");
    JoinConfig join = config.getNetworkConfig().getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    join.getTcpIpConfig().setEnabled(true).setMembers(List.of("127.0.0.1"));
    member = Hazelcast.newHazelcastInstance(config);
  }

  @AfterAll
  static void stopMember() {
    member.shutdown();
  }

  @AfterEach
  void close() {
    routers.forEach(KvRouter::close);
    replicas.forEach(FakeReplica::close);
  }

  private KvRouter router() throws Exception {
    KvRouter r =
        new KvRouter(
            replicas.stream().map(FakeReplica::spec).toList(), options(), Optional.of(member));
    routers.add(r);
    return r;
  }

  private String complete(KvRouter router, int[] tokens) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"prompt\":" + Arrays.toString(tokens) + ",\"max_tokens\":4}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    return r.body();
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    for (int i = 0; i < 800 && !condition.getAsBoolean(); i++) {
      Thread.sleep(25);
    }
    assertThat(condition.getAsBoolean()).as(what).isTrue();
  }

  private static int[] sizes(KvRouter router) {
    int n = router.healthy().length;
    int[] out = new int[n * 2];
    for (int r = 0; r < n; r++) {
      out[2 * r] = router.index().size(r, PrefixIndex.GPU);
      out[2 * r + 1] = router.index().size(r, PrefixIndex.CPU);
    }
    return out;
  }

  @Test
  void twoRoutersReadingTheSameRingbuffersMakeTheSameChoice() throws Exception {
    String run = "shared-" + System.nanoTime() + "-";
    for (int i = 0; i < 3; i++) {
      replicas.add(new FakeReplica(i, member, run + i));
    }
    int[] a = prompt(32, 1);
    int[] b = prompt(24, 2);
    replicas.get(1).caches(a, PAGE, CacheMedium.DEVICE);
    replicas.get(2).caches(b, PAGE, CacheMedium.HOST);
    replicas.get(0).caches(Arrays.copyOf(b, 8), PAGE, CacheMedium.DEVICE);
    KvRouter first = router();
    // The second router starts later: it reads the ringbuffers from their oldest items.
    await(() -> Arrays.equals(sizes(first), new int[] {2, 0, 8, 0, 0, 6}), "the first's index");
    KvRouter second = router();
    await(() -> Arrays.equals(sizes(second), sizes(first)), "the second's index equal");

    for (KvRouter router : routers) {
      assertThat(router.index().match(router.blockHashes(b)))
          .isDeepEqualTo(new int[][] {{2, 0}, {0, 0}, {0, 6}});
    }
    assertThat(complete(first, a)).isEqualTo("{\"replica\":1}");
    assertThat(complete(second, a)).isEqualTo("{\"replica\":1}");
    assertThat(complete(first, b)).isEqualTo("{\"replica\":2}");
    assertThat(complete(second, b)).isEqualTo("{\"replica\":2}");

    // A later event reaches both: replica 0 now holds all of b on its device, and both send b
    // there (6 device blocks beat 6 host blocks).
    replicas.get(0).caches(b, PAGE, CacheMedium.DEVICE);
    await(
        () -> first.index().size(0, PrefixIndex.GPU) == 6 && sizes(second)[0] == 6,
        "replica 0's new blocks in both indexes");
    assertThat(complete(first, b)).isEqualTo("{\"replica\":0}");
    assertThat(complete(second, b)).isEqualTo("{\"replica\":0}");
  }

  @Test
  void aRingbufferReplicaWithoutAClusterIsRefused() throws Exception {
    replicas.add(new FakeReplica(0, member, "refused-" + System.nanoTime()));
    assertThatThrownBy(() -> new KvRouter(List.of(replicas.get(0).spec()), options()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--hazelcast-addresses");
    assertThat(ReplicaSpec.parse("http://h:8000,hazelcast:kvtier-events-0").ringbuffer())
        .contains("kvtier-events-0");
  }
}
