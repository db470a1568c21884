package io.kvtier.route;

import static io.kvtier.route.RouteTesting.PAGE;
import static io.kvtier.route.RouteTesting.await;
import static io.kvtier.route.RouteTesting.lines;
import static io.kvtier.route.RouteTesting.options;
import static io.kvtier.route.RouteTesting.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import io.kvtier.core.cache.CacheMedium;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code kvtier route --prefill ... --decode ...} against stand-in replicas that publish real KV
 * events and play the HTTP contract of docs/SERVE.md: a prefill replica answers with a {@code
 * kv_transfer_params} handle, a decode replica answers (or streams) the request it got with that
 * handle. Each failure of either pool is made to happen.
 */
class DisaggregatedRouterTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<Stub> prefill = new ArrayList<>();
  private final List<Stub> decode = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();
  private final CountDownLatch closing = new CountDownLatch(1);
  private final AtomicInteger handles = new AtomicInteger();
  private Duration readTimeout = Duration.ofSeconds(60);
  private KvRouter router;

  /** How a stand-in answers its next completions. */
  enum Mode {
    /** As the contract says. */
    OK,
    /** 400, as a replica refusing the body (or, at decode, the handle). */
    REFUSE,
    /** 500 before any body, as a replica whose engine failed. */
    SERVER_ERROR,
    /** Headers, then the connection breaks before any body byte (a process killed). */
    BREAK_BEFORE_BODY,
    /** Headers and the first bytes (a stream: its first event), then the connection breaks. */
    BREAK_AFTER_FIRST_BYTES,
    /** Nothing, not even headers, until the test ends; nor on /health (a frozen process). */
    SILENT,
    /** The answer after twice the read timeout; /health answers meanwhile (a busy replica). */
    SLOW,
    /** A 200 answer without kv_transfer_params (a replica that does not disaggregate). */
    NO_HANDLE
  }

  /** A fake replica of one role: its HTTP answers and its KV events. */
  final class Stub {
    final FakeReplica replica;
    final boolean isPrefill;
    volatile Mode mode = Mode.OK;

    Stub(int id, String role) throws IOException {
      this.replica = new FakeReplica(id);
      this.isPrefill = role.equals("prefill");
      replica.role = role;
      replica.completions = this::answer;
    }

    List<ObjectNode> bodies() {
      return replica.bodies.stream().map(DisaggregatedRouterTest::object).toList();
    }

    private void answer(HttpExchange e) throws IOException {
      String text = new String(e.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      replica.bodies.add(text);
      JsonNode parsed;
      try {
        parsed = JSON.readTree(text);
      } catch (IOException notJson) {
        parsed = null;
      }
      if (!(parsed instanceof ObjectNode body)) {
        error(e, 400, "invalid_json");
        return;
      }
      boolean stream = body.path("stream").asBoolean(false);
      Mode m = mode;
      switch (m) {
        case REFUSE -> {
          error(e, 400, isPrefill ? "invalid_request" : "invalid_kv_transfer_params");
          return;
        }
        case SERVER_ERROR -> {
          error(e, 500, "internal_error");
          return;
        }
        case SLOW -> {
          try {
            Thread.sleep(2 * readTimeout.toMillis());
          } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
          }
        }
        case SILENT -> {
          replica.healthFrozen = true;
          try {
            closing.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
          }
          throw new IllegalStateException("stub " + replica.id + " closed while silent");
        }
        default -> {}
      }
      String tag = (isPrefill ? "p" : "d") + replica.id;
      if (stream) {
        e.getResponseHeaders().set("Content-Type", "text/event-stream");
        e.sendResponseHeaders(200, 0);
      } else {
        e.getResponseHeaders().set("Content-Type", "application/json");
      }
      if (m == Mode.BREAK_BEFORE_BODY || m == Mode.BREAK_AFTER_FIRST_BYTES) {
        if (!stream) {
          e.sendResponseHeaders(200, 100);
        }
        if (m == Mode.BREAK_AFTER_FIRST_BYTES) {
          e.getResponseBody()
              .write(
                  (stream ? "data: {\"replica\":\"" + tag + "\",\"i\":0}\n\n" : "{\"replica\"")
                      .getBytes(StandardCharsets.UTF_8));
          e.getResponseBody().flush();
        }
        // The JDK server closes the connection of a handler that throws, mid-body.
        throw new IllegalStateException("stub " + tag + " breaks off its answer");
      }
      if (stream) {
        try (OutputStream out = e.getResponseBody()) {
          for (int i = 0; i < 3; i++) {
            out.write(("data: {\"replica\":\"" + tag + "\",\"i\":" + i + "}\n\n").getBytes());
            out.flush();
          }
          out.write("data: [DONE]\n\n".getBytes());
        }
        return;
      }
      ObjectNode answer = JSON.createObjectNode().put("replica", tag);
      answer.putArray("choices").addObject().put("text", "x").put("finish_reason", "length");
      if (isPrefill && m != Mode.NO_HANDLE) {
        answer
            .putObject(KvRouter.KV_TRANSFER_PARAMS)
            .put("do_remote_prefill", true)
            .put("kvtier_handle", handles.incrementAndGet())
            .put("published_pages", 8)
            .put("prefill_replica", tag);
      } else if (!isPrefill) {
        answer.set("handle_received", body.get(KvRouter.KV_TRANSFER_PARAMS));
      }
      FakeReplica.reply(e, "application/json", JSON.writeValueAsString(answer));
    }
  }

  private static void error(HttpExchange e, int status, String code) throws IOException {
    byte[] b =
        ("{\"error\":{\"message\":\"stub says " + code + "\",\"code\":\"" + code + "\"}}")
            .getBytes(StandardCharsets.UTF_8);
    e.getResponseHeaders().set("Content-Type", "application/json");
    e.sendResponseHeaders(status, b.length);
    try (OutputStream out = e.getResponseBody()) {
      out.write(b);
    }
  }

  private static ObjectNode object(String text) {
    try {
      return (ObjectNode) JSON.readTree(text);
    } catch (IOException e) {
      throw new AssertionError("not a JSON object: " + text, e);
    }
  }

  @AfterEach
  void close() {
    closing.countDown();
    if (router != null) {
      router.close();
    }
    prefill.forEach(s -> s.replica.close());
    decode.forEach(s -> s.replica.close());
  }

  private void stubs(int prefills, int decodes) throws IOException {
    for (int i = 0; i < prefills; i++) {
      prefill.add(new Stub(i, "prefill"));
    }
    for (int i = 0; i < decodes; i++) {
      decode.add(new Stub(i, "decode"));
    }
  }

  private KvRouter startRouter() throws IOException {
    router =
        KvRouter.disaggregated(
            prefill.stream().map(s -> s.replica.spec()).toList(),
            decode.stream().map(s -> s.replica.spec()).toList(),
            options(readTimeout),
            Optional.empty());
    return router;
  }

  private void start(int prefills, int decodes) throws IOException {
    stubs(prefills, decodes);
    startRouter();
  }

  private static String body(int[] tokens, boolean stream) {
    return "{\"model\":\"tiny\",\"prompt\":"
        + Arrays.toString(tokens)
        + ",\"max_tokens\":8,\"temperature\":0"
        + (stream ? ",\"stream\":true" : "")
        + "}";
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + path))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> complete(int[] tokens) throws Exception {
    return post("/v1/completions", body(tokens, false));
  }

  /** The non-blank lines of a streamed answer, to its end. */
  private List<String> stream(String path, String body) throws Exception {
    HttpResponse<InputStream> r =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + path))
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofInputStream());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).contains("text/event-stream");
    return lines(r.body());
  }

  /**
   * Stand-in {@code r} of a pool caches {@code p} on its device, and the pool's index holds its
   * blocks.
   *
   * @return the pool
   */
  private ReplicaPool indexed(KvRouter.Pool pool, int r, int[] p) throws InterruptedException {
    (pool == KvRouter.Pool.PREFILL ? prefill : decode)
        .get(r)
        .replica
        .caches(p, PAGE, CacheMedium.DEVICE);
    ReplicaPool replicas = router.pool(pool);
    await(
        () -> replicas.index().size(r, PrefixIndex.GPU) == p.length / PAGE,
        pool.label() + " replica " + r + "'s blocks indexed");
    return replicas;
  }

  /** Which prefill stand-in made the handle a decode stand-in answered with. */
  private static String prefilledBy(HttpResponse<String> r) {
    return object(r.body()).get("handle_received").get("prefill_replica").asText();
  }

  /** The whole stream of decode stand-in 0. */
  private static final List<String> D0_STREAM =
      List.of(
          "data: {\"replica\":\"d0\",\"i\":0}",
          "data: {\"replica\":\"d0\",\"i\":1}",
          "data: {\"replica\":\"d0\",\"i\":2}",
          "data: [DONE]");

  @Test
  void thePrefillReplicaGetsOneTokenUnstreamedAndTheDecodeReplicaTheBodyWithItsHandle()
      throws Exception {
    start(1, 1);
    int[] p = prompt(32, 1);

    HttpResponse<String> r = complete(p);

    assertThat(r.statusCode()).isEqualTo(200);
    ObjectNode answer = object(r.body());
    assertThat(answer.get("replica").asText()).as("the decode replica answers").isEqualTo("d0");
    ObjectNode sentToPrefill = prefill.get(0).bodies().getFirst();
    ObjectNode expected = object(body(p, false));
    expected.put("max_tokens", 1).put("stream", false);
    expected.putObject("kv_transfer_params").put("do_remote_decode", true);
    assertThat(sentToPrefill).isEqualTo(expected);
    ObjectNode sentToDecode = decode.get(0).bodies().getFirst();
    ObjectNode original = object(body(p, false));
    JsonNode handle = sentToDecode.remove("kv_transfer_params");
    assertThat(sentToDecode).as("the client's own body").isEqualTo(original);
    assertThat(handle.get("kvtier_handle").asInt()).isEqualTo(1);
    assertThat(handle.get("prefill_replica").asText()).isEqualTo("p0");
    assertThat(answer.get("handle_received")).isEqualTo(handle);
    assertThat(router.pool(KvRouter.Pool.PREFILL).routed()).containsExactly(1);
    assertThat(router.pool(KvRouter.Pool.DECODE).routed()).containsExactly(1);
  }

  @Test
  void aStreamedChatGoesToPrefillAsOneTokenAndItsStreamComesFromDecode() throws Exception {
    start(1, 1);
    String chat =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],"
            + "\"max_completion_tokens\":50,\"stream\":true,"
            + "\"stream_options\":{\"include_usage\":true}}";

    List<String> lines = stream("/v1/chat/completions", chat);

    assertThat(lines).isEqualTo(D0_STREAM);
    ObjectNode sentToPrefill = prefill.get(0).bodies().getFirst();
    assertThat(sentToPrefill.get("max_completion_tokens").asInt()).isEqualTo(1);
    assertThat(sentToPrefill.has("max_tokens"))
        .as("not added beside max_completion_tokens")
        .isFalse();
    assertThat(sentToPrefill.get("stream").asBoolean()).isFalse();
    assertThat(sentToPrefill.has("stream_options")).isFalse();
    ObjectNode sentToDecode = decode.get(0).bodies().getFirst();
    assertThat(sentToDecode.get("max_completion_tokens").asInt()).isEqualTo(50);
    assertThat(sentToDecode.get("stream").asBoolean()).isTrue();
    assertThat(sentToDecode.get("stream_options").get("include_usage").asBoolean()).isTrue();
    assertThat(sentToDecode.get("kv_transfer_params").get("kvtier_handle").asInt()).isEqualTo(1);
  }

  @Test
  void eachPoolHasItsOwnIndexPrefillFollowsThePrefixDecodeTheLoad() throws Exception {
    start(2, 2);
    int[] p = prompt(32, 2);
    ReplicaPool prefills = indexed(KvRouter.Pool.PREFILL, 1, p);
    ReplicaPool decodes = indexed(KvRouter.Pool.DECODE, 0, p);
    assertThat(prefills.index().size(0, PrefixIndex.GPU)).isZero();
    assertThat(decodes.index().size(1, PrefixIndex.GPU)).isZero();

    HttpResponse<String> r = complete(p);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(prefills.routed()).as("the prefill replica that caches it").containsExactly(0, 1);
    assertThat(decodes.routed()).as("the decode replica that holds it").containsExactly(1, 0);

    // Two such requests in flight: the prefill pool keeps both where the prefix is (a cached
    // block is worth 16 of load); the decode pool weighs what a replica holds as one block of
    // the KV its generations hold, so the second goes to the idle replica.
    long[] hashes = router.blockHashes(p);
    boolean[] none = new boolean[2];
    ReplicaPool.Choice p1 = prefills.choose(hashes, none);
    ReplicaPool.Choice p2 = prefills.choose(hashes, none);
    ReplicaPool.Choice d1 = decodes.choose(hashes, none);
    ReplicaPool.Choice d2 = decodes.choose(hashes, none);
    assertThat(List.of(p1.replica(), p2.replica())).containsExactly(1, 1);
    assertThat(List.of(d1.replica(), d2.replica())).containsExactly(0, 1);
    assertThat(d1.load()).as("every prompt block: the KV it will hold").isEqualTo(8);
    assertThat(p1.load()).as("only the uncached blocks: the prefill it asks for").isEqualTo(1);
    List.of(p1, p2).forEach(prefills::done);
    List.of(d1, d2).forEach(decodes::done);
  }

  @Test
  void aPrefillReplicaThatIsDownOrBreaksOffIsTakenOutAndAnotherPrefills() throws Exception {
    start(3, 1);
    int[] p = prompt(32, 3);
    prefill.get(0).replica.caches(p, PAGE, CacheMedium.DEVICE);
    prefill.get(1).replica.caches(p, PAGE, CacheMedium.HOST);
    ReplicaPool prefills = router.pool(KvRouter.Pool.PREFILL);
    await(
        () ->
            prefills.index().size(0, PrefixIndex.GPU) == 8
                && prefills.index().size(1, PrefixIndex.CPU) == 8,
        "the prefill replicas' blocks indexed");
    prefill.get(0).replica.stopHttp();
    prefill.get(1).mode = Mode.BREAK_AFTER_FIRST_BYTES;

    HttpResponse<String> r = complete(p);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(prefilledBy(r)).isEqualTo("p2");
    assertThat(prefills.failures()).containsExactly(1, 1, 0);
    assertThat(prefills.retries()).isEqualTo(2);
    assertThat(prefills.index().size(0, PrefixIndex.GPU)).as("the dead one's blocks").isZero();
    assertThat(decode.get(0).bodies()).hasSize(1);
  }

  @Test
  void aPrefillReplicaSilentPastTheReadTimeoutIsTakenOutAndAnotherPrefills() throws Exception {
    readTimeout = Duration.ofSeconds(1);
    start(2, 1);
    int[] p = prompt(32, 4);
    indexed(KvRouter.Pool.PREFILL, 0, p);
    prefill.get(0).mode = Mode.SILENT;

    HttpResponse<String> r = complete(p);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(prefilledBy(r)).isEqualTo("p1");
    assertThat(router.pool(KvRouter.Pool.PREFILL).failures()).containsExactly(1, 0);
  }

  @Test
  void aBusyPrefillReplicaThatAnswersHealthIsWaitedForPastTheReadTimeout() throws Exception {
    readTimeout = Duration.ofSeconds(1);
    start(2, 1);
    int[] p = prompt(32, 21);
    ReplicaPool prefills = indexed(KvRouter.Pool.PREFILL, 0, p);
    prefill.get(0).mode = Mode.SLOW;

    HttpResponse<String> r = complete(p);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(prefilledBy(r)).as("the busy replica's own handle").isEqualTo("p0");
    assertThat(prefills.failures()).containsExactly(0, 0);
    assertThat(prefills.retries()).isZero();
  }

  @Test
  void aPrefillReplicasServerErrorGoesToAnotherWithoutTakingItOut() throws Exception {
    start(2, 1);
    int[] p = prompt(32, 5);
    ReplicaPool prefills = indexed(KvRouter.Pool.PREFILL, 1, p);
    prefill.get(1).mode = Mode.SERVER_ERROR;

    HttpResponse<String> r = complete(p);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(prefilledBy(r)).isEqualTo("p0");
    assertThat(prefills.retries()).isEqualTo(1);
    assertThat(prefills.failures()).as("it answered: still in rotation").containsExactly(0, 0);
    assertThat(prefills.healthy()).containsExactly(true, true);
  }

  @Test
  void aPrefillRefusalGoesToTheClientUnchangedAndNothingToDecode() throws Exception {
    start(2, 1);
    prefill.forEach(s -> s.mode = Mode.REFUSE);

    HttpResponse<String> r = complete(prompt(16, 6));

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body())
        .isEqualTo(
            "{\"error\":{\"message\":\"stub says invalid_request\",\"code\":\"invalid_request\"}}");
    assertThat(router.pool(KvRouter.Pool.PREFILL).retries()).as("a refusal is an answer").isZero();
    assertThat(decode.get(0).bodies()).isEmpty();
  }

  @Test
  void noPrefillReplicaLeftIsA503NamingThePrefillPoolAndTheLastFailure() throws Exception {
    start(2, 1);
    prefill.get(0).replica.stopHttp();
    prefill.get(1).mode = Mode.SERVER_ERROR;

    HttpResponse<String> r = complete(prompt(16, 7));

    assertThat(r.statusCode()).isEqualTo(503);
    JsonNode error = object(r.body()).get("error");
    assertThat(error.get("code").asText()).isEqualTo("no_prefill_replica");
    assertThat(error.get("message").asText())
        .contains("no prefill replica (--prefill) could take the request")
        .contains("--prefill http://127.0.0.1:")
        .contains("retry later");
    assertThat(decode.get(0).bodies()).isEmpty();
    assertThat(router.scrape()).contains("kvtier_route_unavailable_total{pool=\"prefill\"} 1.0");
  }

  @Test
  void aPrefillAnswerWithoutAHandleIsA502ThatSaysWhatToStart() throws Exception {
    start(1, 1);
    prefill.get(0).mode = Mode.NO_HANDLE;

    HttpResponse<String> r = complete(prompt(16, 8));

    assertThat(r.statusCode()).isEqualTo(502);
    assertThat(r.body()).contains("no_kv_transfer_params", "--role prefill");
    assertThat(decode.get(0).bodies()).isEmpty();
  }

  @Test
  void aDecodeReplicaThatDiesBeforeItsFirstByteHandsTheSameHandleToAnother() throws Exception {
    start(1, 2);
    int[] p = prompt(32, 9);
    ReplicaPool decodes = indexed(KvRouter.Pool.DECODE, 1, p);
    decode.get(1).mode = Mode.BREAK_BEFORE_BODY;

    List<String> lines = stream("/v1/completions", body(p, true));

    assertThat(lines).isEqualTo(D0_STREAM);
    assertThat(prefill.get(0).bodies()).as("prefilled once").hasSize(1);
    JsonNode first = decode.get(1).bodies().getFirst().get("kv_transfer_params");
    JsonNode second = decode.get(0).bodies().getFirst().get("kv_transfer_params");
    assertThat(second).as("the same handle").isEqualTo(first);
    assertThat(decodes.failures()).containsExactly(0, 1);
    assertThat(decodes.retries()).isEqualTo(1);
  }

  @Test
  void aDecodeReplicasServerErrorHandsTheSameHandleToAnother() throws Exception {
    start(1, 2);
    int[] p = prompt(32, 10);
    ReplicaPool decodes = indexed(KvRouter.Pool.DECODE, 0, p);
    decode.get(0).mode = Mode.SERVER_ERROR;

    HttpResponse<String> r = complete(p);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(object(r.body()).get("replica").asText()).isEqualTo("d1");
    assertThat(decode.get(1).bodies().getFirst().get("kv_transfer_params"))
        .isEqualTo(decode.get(0).bodies().getFirst().get("kv_transfer_params"));
    assertThat(decodes.healthy()).containsExactly(true, true);
  }

  @Test
  void aDecodeStreamThatBreaksAfterItBeganEndsWithOneErrorEventAndIsNotSentAgain()
      throws Exception {
    start(1, 2);
    decode.forEach(s -> s.mode = Mode.BREAK_AFTER_FIRST_BYTES);

    List<String> lines = stream("/v1/completions", body(prompt(32, 11), true));

    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).matches("data: \\{\"replica\":\"d[01]\",\"i\":0}");
    assertThat(lines.get(1))
        .startsWith("data: {\"error\":{")
        .contains("\"code\":\"replica_failed\"", "send the request again");
    assertThat(router.pool(KvRouter.Pool.DECODE).retries()).isZero();
    assertThat(decode.get(0).bodies().size() + decode.get(1).bodies().size()).isEqualTo(1);
    assertThat(prefill.get(0).bodies()).hasSize(1);
  }

  @Test
  void noDecodeReplicaLeftIsA503NamingTheDecodePool() throws Exception {
    start(1, 2);
    decode.get(0).replica.stopHttp();
    decode.get(1).mode = Mode.BREAK_BEFORE_BODY;

    HttpResponse<String> r = complete(prompt(16, 12));

    assertThat(r.statusCode()).isEqualTo(503);
    JsonNode error = object(r.body()).get("error");
    assertThat(error.get("code").asText()).isEqualTo("no_decode_replica");
    assertThat(error.get("message").asText())
        .contains("no decode replica (--decode) could take the request", "--decode http://");
    assertThat(router.pool(KvRouter.Pool.DECODE).failures()).containsExactly(1, 1);

    // Both out of rotation now: the next request is not prefilled for nothing.
    HttpResponse<String> again = complete(prompt(16, 19));
    assertThat(again.statusCode()).isEqualTo(503);
    assertThat(again.body()).contains("no_decode_replica", "none is in rotation");
    assertThat(prefill.get(0).bodies()).hasSize(1);
  }

  @Test
  void aDecodeRefusalOfTheHandleGoesToTheClientUnchanged() throws Exception {
    start(1, 2);
    decode.forEach(s -> s.mode = Mode.REFUSE);

    HttpResponse<String> r = complete(prompt(16, 13));

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("invalid_kv_transfer_params");
    assertThat(router.pool(KvRouter.Pool.DECODE).retries()).isZero();
  }

  @Test
  void aClientsOwnKvTransferParamsIsRefusedAndABadBodyGoesToDecodeAsItIs() throws Exception {
    start(1, 1);
    HttpResponse<String> own =
        post(
            "/v1/completions",
            "{\"model\":\"tiny\",\"prompt\":\"hi\",\"kv_transfer_params\":{\"do_remote_decode\":true}}");
    assertThat(own.statusCode()).isEqualTo(400);
    assertThat(own.body()).contains("invalid_kv_transfer_params", "drop it from the request");

    HttpResponse<String> bad = post("/v1/completions", "[1, 2");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("invalid_json");
    assertThat(decode.get(0).replica.bodies).containsExactly("[1, 2");
    assertThat(prefill.get(0).bodies()).isEmpty();
  }

  @Test
  void aReplicaOfTheWrongRoleIsRefusedAtStartAndOneThatIsDownJoinsWhenItsRoleFits()
      throws Exception {
    stubs(1, 1);
    decode.add(new Stub(1, "decode"));
    decode.get(1).replica.role = "prefill";
    assertThatThrownBy(this::startRouter)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(
            "--decode http://127.0.0.1:" + decode.get(1).replica.port() + " is a prefill replica")
        .hasMessageContaining("--role decode or --role both");
    router = null;

    // A replica without a role field (before the roles) serves both: fits either pool.
    decode.get(1).replica.role = null;
    int port = prefill.get(0).replica.port();
    prefill.get(0).replica.stopHttp();
    startRouter();
    ReplicaPool prefills = router.pool(KvRouter.Pool.PREFILL);
    assertThat(prefills.healthy()).as("down at start: out of rotation").containsExactly(false);
    assertThat(router.pool(KvRouter.Pool.DECODE).healthy()).containsExactly(true, true);
    HttpResponse<String> none = complete(prompt(16, 14));
    assertThat(none.statusCode()).isEqualTo(503);
    assertThat(none.body()).contains("none is in rotation");

    // It comes back as a decode replica: kept out, and the 503 says why.
    prefill.get(0).replica.role = "decode";
    prefill.get(0).replica.start(port);
    await(() -> !prefills.misfits().isEmpty(), "the health check read its role");
    HttpResponse<String> misfit = complete(prompt(16, 15));
    assertThat(misfit.statusCode()).isEqualTo(503);
    assertThat(misfit.body()).contains("is a decode replica", "--role prefill or --role both");

    // Restarted as a prefill replica: in rotation.
    prefill.get(0).replica.role = "prefill";
    await(() -> prefills.healthy()[0], "back in rotation with a role that fits");
    assertThat(complete(prompt(16, 16)).statusCode()).isEqualTo(200);
  }

  @Test
  void withTenantsBothReplicasGetTheClientsOwnKey() throws Exception {
    stubs(1, 1);
    router =
        KvRouter.disaggregated(
            List.of(prefill.get(0).replica.spec()),
            List.of(decode.get(0).replica.spec()),
            options(readTimeout)
                .withTenants(
                    Optional.of(
                        io.kvtier.core.tenant.ApiKeys.parse(
                            "keys", List.of("sk-a alice", "sk-b bob"))),
                    io.kvtier.core.tenant.CacheNamespaces.random(Optional.empty())),
            Optional.empty());
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
                .header("Authorization", "Bearer sk-b")
                .POST(HttpRequest.BodyPublishers.ofString(body(prompt(16, 20), false)))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(prefill.get(0).replica.authorizations).containsExactly("Bearer sk-b");
    assertThat(decode.get(0).replica.authorizations)
        .as("the decode replica checks the handle in the tenant's namespace")
        .containsExactly("Bearer sk-b");
  }

  @Test
  void theMetricsTimeBothPhasesPerPool() throws Exception {
    start(1, 1);
    assertThat(complete(prompt(16, 17)).statusCode()).isEqualTo(200);
    assertThat(stream("/v1/completions", body(prompt(16, 18), true))).hasSize(4);

    HttpResponse<String> metrics =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/metrics"))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body())
        .contains(
            "kvtier_route_phase_seconds_count{phase=\"prefill\"} 2",
            "kvtier_route_phase_seconds_count{phase=\"decode\"} 2",
            "kvtier_route_decode_first_bytes_seconds_count 2",
            "kvtier_route_requests_total{pool=\"prefill\",replica=\"http://127.0.0.1:"
                + prefill.get(0).replica.port()
                + "\"} 2.0",
            "kvtier_route_requests_total{pool=\"decode\",replica=\"http://127.0.0.1:"
                + decode.get(0).replica.port()
                + "\"} 2.0",
            "kvtier_route_replica_up{pool=\"decode\"",
            "kvtier_route_retries_total{pool=\"decode\"} 0.0");
  }
}
