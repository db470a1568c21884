package io.kvtier.cli;

import static io.kvtier.cli.ReplicaProcesses.lines;
import static io.kvtier.cli.ReplicaProcesses.prompt;
import static io.kvtier.cli.ReplicaProcesses.signal;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.cli.ReplicaProcesses.Ports;
import io.kvtier.route.KvRouter;
import io.kvtier.route.PrefixIndex;
import io.kvtier.route.RoutePolicy;
import io.kvtier.route.RouteScore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier route} over three real {@code kvtier serve} processes publishing KV events, one
 * of which is frozen and killed mid-run: requests it held that had sent nothing yet are retried
 * on the others and succeed, a stream it had begun ends with an error event (not a hang), the
 * index forgets its blocks, and once it runs again (a new event stream that begins with
 * AllBlocksCleared) it rejoins the rotation and the index. Waits are bounded; nothing is timed.
 *
 * <p>The replicas are {@link ReplicaProcesses}; the router runs in the test JVM.
 */
@Timeout(300)
class RouteReplicaFailureTest {
  private static final int REPLICAS = 3;

  @TempDir Path dir;

  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private ReplicaProcesses replicas;
  private KvRouter router;
  private int lives;

  @BeforeEach
  void start() {
    replicas = new ReplicaProcesses(dir, this::state);
  }

  @AfterEach
  void stop() {
    if (router != null) {
      router.close();
    }
    replicas.close();
  }

  private Process serve(int i, Ports ports) throws IOException, InterruptedException {
    return replicas.serve(
        "replica-" + i + "-" + lives++, ports, "--device-pages", "64", "--host-pages", "64");
  }

  /** What a failed wait prints before the logs: the router's view. */
  private String state() {
    StringBuilder b = new StringBuilder();
    if (router != null) {
      b.append("; routed ")
          .append(java.util.Arrays.toString(router.routed()))
          .append(", event batches ")
          .append(java.util.Arrays.toString(router.eventBatches()))
          .append(", healthy ")
          .append(java.util.Arrays.toString(router.healthy()));
    }
    return b.toString();
  }

  private HttpRequest request(String prompt, boolean stream, int maxTokens) {
    return ReplicaProcesses.completion(router.port(), prompt, maxTokens, stream, "");
  }

  private int complete(String prompt) throws Exception {
    return http.send(request(prompt, false, 4), HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  private int cachedBlocks(int replica) {
    return router.index().size(replica, PrefixIndex.GPU)
        + router.index().size(replica, PrefixIndex.CPU);
  }

  @Test
  void aKilledReplicaLeavesTheRotationAndTheIndexItsRequestsAreRetriedAndItRejoins()
      throws Exception {
    List<Ports> ports = new ArrayList<>();
    List<Process> replica = new ArrayList<>();
    for (int i = 0; i < REPLICAS; i++) {
      ports.add(Ports.free());
      replica.add(serve(i, ports.get(i)));
    }
    router =
        new KvRouter(
            ports.stream().map(Ports::spec).toList(),
            new KvRouter.Options(
                "127.0.0.1",
                0,
                16,
                RouteScore.DEFAULT,
                RoutePolicy.PREFIX,
                Optional.empty(),
                Optional.empty(),
                Duration.ofSeconds(2),
                Duration.ofSeconds(60)));
    // Warm-up: distinct prompts spread over the replicas by load; the events fill the index.
    for (int i = 0; i < 6; i++) {
      assertThat(complete(prompt(i, 64))).isEqualTo(200);
    }
    replicas.await(
        () -> cachedBlocks(0) > 0 && cachedBlocks(1) > 0 && cachedBlocks(2) > 0,
        "every replica's blocks indexed");
    String shared = prompt(100, 96);
    assertThat(complete(shared)).isEqualTo(200);
    int victim = -1;
    for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        victim < 0 && System.nanoTime() < deadline; ) {
      victim = holder(shared);
      Thread.sleep(50);
    }
    assertThat(victim).as("the replica that cached the shared prompt").isNotNegative();
    int v = victim;
    long routedBefore = router.routed()[v];

    try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
      // A long stream on the victim, begun; then the victim freezes (as a hung or dying host).
      HttpResponse<InputStream> begun =
          http.send(request(shared + "x", true, 120), HttpResponse.BodyHandlers.ofInputStream());
      BufferedReader stream =
          new BufferedReader(new InputStreamReader(begun.body(), StandardCharsets.UTF_8));
      String firstEvent = stream.readLine();
      assertThat(firstEvent).startsWith("data: {");
      signal(replica.get(v), "STOP");
      // Requests that prefer the victim (its cached prefix) and wait there without an answer.
      List<Future<Integer>> waiting = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        String p = shared + "q" + i;
        waiting.add(clients.submit(() -> complete(p)));
      }
      replicas.await(
          () -> router.inFlight()[v] >= 1 + 4, "the requests wait on the frozen replica");
      replica.get(v).destroyForcibly().waitFor();

      for (Future<Integer> f : waiting) {
        assertThat(f.get(120, TimeUnit.SECONDS)).as("a request retried elsewhere").isEqualTo(200);
      }
      assertThat(router.retries()).isGreaterThanOrEqualTo(4);
      List<String> rest = lines(stream);
      assertThat(rest).as("the begun stream's end").isNotEmpty();
      assertThat(rest.getLast())
          .startsWith("data: {\"error\":")
          .contains("replica_failed")
          .doesNotContain("[DONE]");
    }
    assertThat(router.healthy()[v]).isFalse();
    replicas.await(() -> cachedBlocks(v) == 0, "the dead replica's blocks forgotten");
    for (int i = 0; i < 6; i++) {
      assertThat(complete(prompt(200 + i, 64))).as("served by the others").isEqualTo(200);
    }
    assertThat(router.routed()[v]).isEqualTo(routedBefore + 1);

    // It comes back on the same addresses: the health check returns it to the rotation, and the
    // events of its new life (from AllBlocksCleared on) fill the index again.
    replica.set(v, serve(v, ports.get(v)));
    replicas.await(() -> router.healthy()[v], "the replica back in rotation");
    long routedAgain = router.routed()[v];
    for (int i = 0; i < 12 && router.routed()[v] == routedAgain; i++) {
      assertThat(complete(prompt(300 + i, 64))).isEqualTo(200);
    }
    assertThat(router.routed()[v]).as("requests reach it again").isGreaterThan(routedAgain);
    replicas.await(() -> cachedBlocks(v) > 0, "its new blocks indexed");
  }

  /** The replica whose device holds the prompt's blocks, or -1. */
  private int holder(String prompt) {
    int[] tokens = new int[prompt.length() - prompt.length() % 16];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = prompt.charAt(i);
    }
    long[] hashes =
        io.kvtier.core.cache.PageHasher.pageKeys(0, tokens, 16).stream()
            .mapToLong(io.kvtier.spi.PageKey::h0)
            .toArray();
    int[][] match = router.index().match(hashes);
    for (int r = 0; r < match.length; r++) {
      if (match[r][0] == hashes.length) {
        return r;
      }
    }
    return -1;
  }
}
