package io.kvtier.route;

import static io.kvtier.route.RouteTesting.PAGE;
import static io.kvtier.route.RouteTesting.await;
import static io.kvtier.route.RouteTesting.lines;
import static io.kvtier.route.RouteTesting.options;
import static io.kvtier.route.RouteTesting.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.CacheMedium;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The router against fake replicas that publish real KV events. */
class KvRouterTest {
  private final List<FakeReplica> replicas = new ArrayList<>();
  private KvRouter router;
  private Duration readTimeout = Duration.ofSeconds(60);

  /** {@code --replica-answer-timeout}; null: the default. */
  private Duration answerTimeout;

  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void close() {
    if (router != null) {
      router.close();
    }
    replicas.forEach(FakeReplica::close);
  }

  private void start(int n, Optional<String> key) throws Exception {
    start(n, key, RoutePolicy.PREFIX);
  }

  private void start(int n, Optional<String> key, RoutePolicy policy) throws Exception {
    for (int i = 0; i < n; i++) {
      replicas.add(new FakeReplica(i));
    }
    KvRouter.Options options =
        new KvRouter.Options(
            "127.0.0.1",
            0,
            PAGE,
            RouteScore.DEFAULT,
            policy,
            key,
            key.map(k -> "replica-" + k),
            Duration.ofSeconds(2),
            readTimeout);
    if (answerTimeout != null) {
      options = options.withAnswerTimeout(answerTimeout);
    }
    router = new KvRouter(replicas.stream().map(FakeReplica::spec).toList(), options);
  }

  private HttpResponse<String> complete(int[] tokens, Optional<String> key) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"model\":\"tiny\",\"prompt\":"
                        + Arrays.toString(tokens)
                        + ",\"max_tokens\":4}"));
    key.ifPresent(k -> b.header("Authorization", "Bearer " + k));
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aPromptGoesToTheReplicaThatCachesItsPrefixEvenIfItsEventsCameBeforeTheRouter()
      throws Exception {
    for (int i = 0; i < 3; i++) {
      replicas.add(new FakeReplica(i));
    }
    int[] shared = prompt(32, 1);
    replicas.get(2).caches(shared, PAGE, CacheMedium.DEVICE);
    Thread.sleep(100);
    router = new KvRouter(replicas.stream().map(FakeReplica::spec).toList(), options());
    // A later batch shows the router the gap before it; the replay fills it.
    for (int i = 0; router.index().size(2, PrefixIndex.GPU) < 8 + 2; i++) {
      assertThat(i).as("waits for the replayed prefix").isLessThan(400);
      if (i % 20 == 0) {
        replicas.get(2).caches(prompt(8, 100 + i), PAGE, CacheMedium.DEVICE);
      }
      Thread.sleep(25);
    }
    int[] longer = Arrays.copyOf(shared, 40);
    for (int i = 32; i < 40; i++) {
      longer[i] = 7;
    }
    for (int i = 0; i < 5; i++) {
      HttpResponse<String> r = complete(longer, Optional.empty());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).isEqualTo("{\"replica\":2}");
    }
    assertThat(router.routed()).containsExactly(0, 0, 5);
    // No overlap anywhere: by load, then in turn.
    for (int i = 0; i < 6; i++) {
      assertThat(complete(prompt(16, 500 + i), Optional.empty()).statusCode()).isEqualTo(200);
    }
    assertThat(router.routed()[0]).isPositive();
    assertThat(router.routed()[1]).isPositive();
  }

  @Test
  void aDeviceHitBeatsAHostHitOfTheSameLength() throws Exception {
    start(2, Optional.empty());
    int[] p = prompt(24, 2);
    replicas.get(0).caches(p, PAGE, CacheMedium.HOST);
    replicas.get(1).caches(p, PAGE, CacheMedium.DEVICE);
    await(
        () ->
            router.index().size(0, PrefixIndex.CPU) == 6
                && router.index().size(1, PrefixIndex.GPU) == 6,
        "both replicas' events indexed");
    assertThat(complete(p, Optional.empty()).body()).isEqualTo("{\"replica\":1}");
    int[][] match = router.index().match(router.blockHashes(p));
    assertThat(match[0]).containsExactly(0, 6);
    assertThat(match[1]).containsExactly(6, 0);
  }

  @Test
  void theApiKeyIsCheckedAndTheReplicaKeyForwarded() throws Exception {
    start(1, Optional.of("secret"));
    HttpResponse<String> refused = complete(prompt(8, 3), Optional.empty());
    assertThat(refused.statusCode()).isEqualTo(401);
    assertThat(refused.body()).contains("invalid_api_key");
    assertThat(complete(prompt(8, 3), Optional.of("wrong")).statusCode()).isEqualTo(401);
    assertThat(complete(prompt(8, 3), Optional.of("secret")).statusCode()).isEqualTo(200);
    assertThat(replicas.get(0).authorizations).containsExactly("Bearer replica-secret");
  }

  @Test
  void aStreamPassesThroughEventByEvent() throws Exception {
    start(1, Optional.empty());
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
            .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"hello\",\"stream\":true}"))
            .build();
    HttpResponse<java.io.InputStream> r =
        http.send(request, HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.headers().firstValue("Content-Type")).contains("text/event-stream");
    assertThat(lines(r.body()))
        .containsExactly(
            "data: {\"replica\":0,\"i\":0}",
            "data: {\"replica\":0,\"i\":1}",
            "data: {\"replica\":0,\"i\":2}",
            "data: [DONE]");
  }

  @Test
  void aDeadReplicaIsTakenOutItsBlocksForgottenAndTheRequestRetriedElsewhere() throws Exception {
    start(3, Optional.empty());
    int[] p = prompt(32, 4);
    replicas.get(1).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(1, PrefixIndex.GPU) == 8, "replica 1's blocks indexed");
    int port = replicas.get(1).port();
    replicas.get(1).stopHttp();

    HttpResponse<String> r = complete(p, Optional.empty());
    assertThat(r.statusCode()).as("the retried request").isEqualTo(200);
    assertThat(r.body()).isIn("{\"replica\":0}", "{\"replica\":2}");
    assertThat(router.retries()).isEqualTo(1);
    assertThat(router.healthy()).containsExactly(true, false, true);
    assertThat(router.index().size(1, PrefixIndex.GPU)).as("the dead replica's blocks").isZero();
    for (int i = 0; i < 4; i++) {
      assertThat(complete(prompt(8, 10 + i), Optional.empty()).statusCode()).isEqualTo(200);
    }
    assertThat(router.routed()[1]).isZero();

    // It comes back: the health check returns it to rotation.
    replicas.get(1).start(port);
    await(() -> router.healthy()[1], "replica 1 back in rotation");
    // Longer than p, which the replica that took the retry is predicted to hold.
    int[] longer = prompt(40, 4);
    replicas.get(1).caches(longer, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(1, PrefixIndex.GPU) == 10, "replica 1's new events indexed");
    assertThat(complete(longer, Optional.empty()).body()).isEqualTo("{\"replica\":1}");
  }

  @Test
  void aGapTheReplayCannotFillForgetsWhatCameBefore() throws Exception {
    replicas.add(new FakeReplica(0, 2));
    for (int i = 0; i < 5; i++) {
      replicas.get(0).caches(prompt(8, 20 + i), PAGE, CacheMedium.DEVICE);
    }
    Thread.sleep(100);
    router = new KvRouter(List.of(replicas.get(0).spec()), options());
    // Batch 0 (AllBlocksCleared and the first prompt) and the next two are gone from the replay
    // buffer of 2: the router keeps only the two prompts it could replay.
    await(() -> router.eventBatches()[0] == 2, "the two replayable batches applied");
    assertThat(router.index().size(0, PrefixIndex.GPU)).isEqualTo(4);
    assertThat(router.index().match(router.blockHashes(prompt(8, 24)))[0]).containsExactly(2, 0);
    assertThat(router.index().match(router.blockHashes(prompt(8, 20)))[0]).containsExactly(0, 0);
  }

  @Test
  void roundRobinIgnoresWhatTheReplicasCache() throws Exception {
    start(3, Optional.empty(), RoutePolicy.ROUND_ROBIN);
    int[] p = prompt(32, 6);
    replicas.get(2).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(2, PrefixIndex.GPU) == 8, "replica 2's blocks indexed");
    for (int i = 0; i < 6; i++) {
      assertThat(complete(p, Optional.empty()).statusCode()).isEqualTo(200);
    }
    assertThat(router.routed()).containsExactly(2, 2, 2);
    assertThat(RoutePolicy.parse("round-robin")).isEqualTo(RoutePolicy.ROUND_ROBIN);
    assertThatThrownBy(() -> RoutePolicy.parse("random"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[prefix, round-robin]");
  }

  @Test
  void aReplyThatBreaksOffBeforeTheClientGotAnythingIsRetriedElsewhere() throws Exception {
    start(2, Optional.empty());
    int[] p = prompt(32, 7);
    replicas.get(0).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(0, PrefixIndex.GPU) == 8, "replica 0's blocks indexed");
    replicas.get(0).answer = FakeReplica.Answer.BREAK_AFTER_FIRST_BYTES;

    HttpResponse<String> r = complete(p, Optional.empty());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).as("read whole before it is passed on").isEqualTo("{\"replica\":1}");
    assertThat(router.retries()).isEqualTo(1);
    // Taken out of rotation (the health check may have put it back: its /v1/models answers).
    assertThat(router.failures()).containsExactly(1, 0);
  }

  @Test
  void aStreamThatBreaksOffBeforeItsFirstBytesIsRetriedElsewhere() throws Exception {
    start(2, Optional.empty());
    int[] p = prompt(32, 8);
    replicas.get(1).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(1, PrefixIndex.GPU) == 8, "replica 1's blocks indexed");
    replicas.get(1).answer = FakeReplica.Answer.BREAK_BEFORE_BODY;

    assertThat(stream(p))
        .containsExactly(
            "data: {\"replica\":0,\"i\":0}",
            "data: {\"replica\":0,\"i\":1}",
            "data: {\"replica\":0,\"i\":2}",
            "data: [DONE]");
    assertThat(router.retries()).isEqualTo(1);
    assertThat(router.failures()).containsExactly(0, 1);
  }

  @Test
  void aStreamThatBreaksOffMidwayEndsWithAnErrorEventNotAHang() throws Exception {
    start(2, Optional.empty());
    int[] p = prompt(32, 9);
    replicas.get(0).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(0, PrefixIndex.GPU) == 8, "replica 0's blocks indexed");
    replicas.get(0).answer = FakeReplica.Answer.BREAK_AFTER_FIRST_BYTES;

    List<String> lines = stream(p);
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).isEqualTo("data: {\"replica\":0,\"i\":0}");
    assertThat(lines.get(1))
        .startsWith("data: {\"error\":{")
        .contains("\"code\":\"replica_failed\"", "send the request again");
    assertThat(router.retries()).as("a stream begun is not sent again").isZero();
    assertThat(router.failures()).containsExactly(1, 0);
  }

  @Test
  void aRoutedPromptIsPredictedAtItsReplicaUnlessTheReplicaRefusesIt() throws Exception {
    start(1, Optional.empty());
    // The replica's first batch (AllBlocksCleared) clears predictions too: wait for it.
    await(() -> router.eventBatches()[0] >= 1, "the replica's first batch applied");
    assertThat(complete(prompt(32, 12), Optional.empty()).statusCode()).isEqualTo(200);
    assertThat(router.index().predicted(0)).as("no events yet: predicted").isEqualTo(8);
    replicas.get(0).answer = FakeReplica.Answer.REFUSE;
    HttpResponse<String> refused = complete(prompt(32, 13), Optional.empty());
    assertThat(refused.statusCode()).as("passed through").isEqualTo(429);
    assertThat(refused.body()).contains("queue_full");
    assertThat(router.index().predicted(0)).as("the refused prompt's blocks").isEqualTo(8);
    assertThat(router.failures()).as("a refusal is an answer").containsExactly(0);
  }

  @Test
  void aReplicaSilentBeforeItsHeadersTimesOutAndTheRequestIsRetried() throws Exception {
    // Its GET /health answers: it is waited for until the answer timeout, then retried.
    readTimeout = Duration.ofSeconds(1);
    answerTimeout = Duration.ofSeconds(2);
    start(2, Optional.empty());
    int[] p = prompt(32, 10);
    replicas.get(0).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(0, PrefixIndex.GPU) == 8, "replica 0's blocks indexed");
    replicas.get(0).answer = FakeReplica.Answer.SILENT;

    HttpResponse<String> r = complete(p, Optional.empty());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("{\"replica\":1}");
    assertThat(router.retries()).isEqualTo(1);
    assertThat(router.failures()).containsExactly(1, 0);
  }

  @Test
  void aBusyReplicaThatAnswersHealthIsWaitedForPastTheReadTimeout() throws Exception {
    readTimeout = Duration.ofSeconds(1);
    start(2, Optional.empty());
    int[] p = prompt(32, 14);
    replicas.get(0).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(0, PrefixIndex.GPU) == 8, "replica 0's blocks indexed");
    // A whole answer 2.5 s late (a long generation that is not streamed), /health answering.
    replicas.get(0).answer = FakeReplica.Answer.SLOW;

    HttpResponse<String> r = complete(p, Optional.empty());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).as("the busy replica's own answer").isEqualTo("{\"replica\":0}");
    assertThat(router.retries()).isZero();
    assertThat(router.failures()).containsExactly(0, 0);
  }

  @Test
  void aStreamSilentAfterItsFirstEventEndsWithAnErrorEventNotAHang() throws Exception {
    readTimeout = Duration.ofSeconds(1);
    start(2, Optional.empty());
    int[] p = prompt(32, 11);
    replicas.get(1).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(1, PrefixIndex.GPU) == 8, "replica 1's blocks indexed");
    replicas.get(1).answer = FakeReplica.Answer.SILENT_AFTER_FIRST_EVENT;

    List<String> lines = stream(p);
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).isEqualTo("data: {\"replica\":1,\"i\":0}");
    assertThat(lines.get(1))
        .startsWith("data: {\"error\":{")
        .contains("\"code\":\"replica_failed\"", "sent nothing for 1 s");
    assertThat(router.failures()).containsExactly(0, 1);
  }

  @Test
  void aClientThatGoesAwayMidStreamLeavesTheReplicaInRotationAndIsNotResent() throws Exception {
    start(2, Optional.empty());
    int[] p = prompt(32, 14);
    replicas.get(0).caches(p, PAGE, CacheMedium.DEVICE);
    await(() -> router.index().size(0, PrefixIndex.GPU) == 8, "replica 0's blocks indexed");
    replicas.get(0).answer = FakeReplica.Answer.ENDLESS;
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"prompt\":" + Arrays.toString(p) + ",\"stream\":true}"))
            .build();
    HttpResponse<java.io.InputStream> r =
        http.send(request, HttpResponse.BodyHandlers.ofInputStream());
    try (BufferedReader in = new BufferedReader(new InputStreamReader(r.body()))) {
      assertThat(in.readLine()).isEqualTo("data: {\"replica\":0,\"i\":0}");
    }

    await(() -> router.inFlight()[0] == 0, "the router let the stream go");
    assertThat(router.failures()).as("the client went, not the replica").containsExactly(0, 0);
    assertThat(router.retries()).isZero();
    assertThat(router.routed()).containsExactly(1, 0);
  }

  /** The non-blank lines of a streamed completion, to the end of the stream. */
  private List<String> stream(int[] tokens) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"prompt\":" + Arrays.toString(tokens) + ",\"stream\":true}"))
            .build();
    HttpResponse<java.io.InputStream> r =
        http.send(request, HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    return lines(r.body());
  }

  @Test
  void noReachableReplicaIsA503() throws Exception {
    start(1, Optional.empty());
    replicas.get(0).stopHttp();
    HttpResponse<String> r = complete(prompt(8, 5), Optional.empty());
    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.body()).contains("no replica is reachable");
  }

  @Test
  void badReplicaSpecsAndOptionsAreRefused() {
    assertThatThrownBy(() -> ReplicaSpec.parse("http://h:8000"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("HTTP_BASE,EVENTS_ENDPOINT");
    assertThatThrownBy(() -> ReplicaSpec.parse("ftp://h:8000,tcp://h:5557"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("http://host:port");
    assertThat(ReplicaSpec.parse("http://h:8000,tcp://h:5557,tcp://h:5558").replay())
        .contains("tcp://h:5558");
    assertThatThrownBy(() -> options(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--replica-read-timeout 0 must be >= 1 second");
    assertThatThrownBy(() -> new RouteScore(1, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hostWeight=2.0");
    assertThat(RouteScore.DEFAULT.score(4, 2, 3)).isEqualTo(16 * (4 + 1) - 3);
  }
}
