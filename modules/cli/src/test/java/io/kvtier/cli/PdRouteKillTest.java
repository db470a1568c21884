package io.kvtier.cli;

import static io.kvtier.cli.ReplicaProcesses.lines;
import static io.kvtier.cli.ReplicaProcesses.prompt;
import static io.kvtier.cli.ReplicaProcesses.signal;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvtier.route.KvRouter;
import io.kvtier.route.ReplicaSpec;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
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
 * {@code kvtier route --prefill ... --decode ...} over real {@code kvtier serve --role prefill}
 * and {@code --role decode} processes (two of each) sharing one {@code --l3 file} directory,
 * killed one after the other with SIGKILL while they hold requests: a prefill replica killed
 * mid-request (frozen first, so the request is surely there) hands its requests to the other
 * prefill replica; a decode replica killed before its first byte hands the same handle to the
 * other decode replica, whose stream completes; a decode replica killed mid-stream ends that
 * stream with one error event; with the decode pool empty, a request is answered 503 naming the
 * pool before anything is prefilled (an empty prefill pool: {@code DisaggregatedRouterTest}). No
 * wait is unbounded and nothing is timed.
 *
 * <p>The replicas are {@link ReplicaProcesses}; the router runs in the test JVM.
 */
@Timeout(300)
class PdRouteKillTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private ReplicaProcesses replicas;
  private KvRouter router;

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

  /** Starts a replica of a role over the shared L3 directory; waits until it listens. */
  private Process serve(String name, String role, List<ReplicaSpec> pool)
      throws IOException, InterruptedException {
    ReplicaProcesses.Ports ports = ReplicaProcesses.Ports.free();
    Process p =
        replicas.serve(
            name,
            ports,
            "--role",
            role,
            "--l3",
            "file",
            "--l3-dir",
            dir.resolve("l3").toString(),
            "--replica-id",
            name,
            "--device-pages",
            "128",
            "--host-pages",
            "128");
    pool.add(ports.spec());
    return p;
  }

  /** What a failed wait prints before the logs: the router's view of both pools. */
  private String state() {
    StringBuilder b = new StringBuilder();
    if (router != null) {
      for (KvRouter.Pool pool : List.of(KvRouter.Pool.PREFILL, KvRouter.Pool.DECODE)) {
        b.append("; ")
            .append(pool.label())
            .append(": routed ")
            .append(Arrays.toString(router.routed(pool)))
            .append(", in flight ")
            .append(Arrays.toString(router.inFlight(pool)))
            .append(", healthy ")
            .append(Arrays.toString(router.healthy(pool)));
      }
    }
    return b.toString();
  }

  private HttpRequest request(String prompt, boolean stream, int maxTokens) {
    return ReplicaProcesses.completion(
        router.port(),
        prompt,
        maxTokens,
        stream,
        ",\"temperature\":0" + (stream ? ",\"stream_options\":{\"include_usage\":true}" : ""));
  }

  /**
   * The {@code kvtier.transfer} object of an answer, or of a stream's usage chunk: the pages the
   * decode replica expected from the handle and fetched from the store.
   */
  private static JsonNode transfer(String json) throws IOException {
    return JSON.readTree(json).path("kvtier").path("transfer");
  }

  private HttpResponse<String> complete(String prompt) throws Exception {
    return http.send(request(prompt, false, 4), HttpResponse.BodyHandlers.ofString());
  }

  /** The replica of a pool that holds a request now, or -1. */
  private int holding(KvRouter.Pool pool) {
    long[] inFlight = router.inFlight(pool);
    for (int r = 0; r < inFlight.length; r++) {
      if (inFlight[r] > 0) {
        return r;
      }
    }
    return -1;
  }

  @Test
  void killedPrefillAndDecodeReplicasRetryWithinTheirPoolOrFailClearly() throws Exception {
    List<ReplicaSpec> prefills = new ArrayList<>();
    List<ReplicaSpec> decodes = new ArrayList<>();
    List<Process> prefill = new ArrayList<>();
    List<Process> decode = new ArrayList<>();
    Files.createDirectories(dir.resolve("l3"));
    for (int i = 0; i < 2; i++) {
      prefill.add(serve("prefill-" + i, "prefill", prefills));
      decode.add(serve("decode-" + i, "decode", decodes));
    }
    router =
        KvRouter.disaggregated(
            prefills,
            decodes,
            new KvRouter.Options(
                "127.0.0.1",
                0,
                16,
                RouteScore.DEFAULT,
                RoutePolicy.PREFIX,
                Optional.empty(),
                Optional.empty(),
                Duration.ofSeconds(2),
                Duration.ofSeconds(60)),
            Optional.empty());
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> warm = complete(prompt(i, 64));
      assertThat(warm.statusCode()).as(warm.body()).isEqualTo(200);
    }

    try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
      // 1. A prefill replica frozen, then killed, while it holds requests: the other prefills.
      signal(prefill.get(0), "STOP");
      List<Future<HttpResponse<String>>> waiting = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        String p = prompt(100 + i, 64);
        waiting.add(clients.submit(() -> complete(p)));
      }
      replicas.await(
          () -> router.inFlight(KvRouter.Pool.PREFILL)[0] >= 1, "a prefill waits on prefill-0");
      prefill.get(0).destroyForcibly().waitFor();
      for (Future<HttpResponse<String>> f : waiting) {
        HttpResponse<String> r = f.get(120, TimeUnit.SECONDS);
        assertThat(r.statusCode()).as("retried on prefill-1: %s", r.body()).isEqualTo(200);
        JsonNode transfer = transfer(r.body());
        assertThat(transfer.path("pages_expected").asInt()).as(r.body()).isPositive();
        assertThat(transfer.path("pages_fetched").asInt())
            .as("the pages prefill-1 published, fetched by the decode replica: %s", r.body())
            .isPositive();
      }
      assertThat(router.retries(KvRouter.Pool.PREFILL)).isPositive();
      assertThat(router.failures(KvRouter.Pool.PREFILL)).containsExactly(1, 0);

      // 2. A decode replica frozen, then killed, before its first byte: the same handle goes
      // to the other decode replica, which fetches the pages and streams to the end.
      long prefilled = Arrays.stream(router.routed(KvRouter.Pool.PREFILL)).sum();
      signal(decode.get(0), "STOP");
      List<Future<List<String>>> streams = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        String p = prompt(200 + i, 64);
        streams.add(
            clients.submit(
                () -> {
                  HttpResponse<InputStream> r =
                      http.send(request(p, true, 8), HttpResponse.BodyHandlers.ofInputStream());
                  try (BufferedReader in =
                      new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                    return lines(in);
                  }
                }));
      }
      replicas.await(
          () -> router.inFlight(KvRouter.Pool.DECODE)[0] >= 1, "a decode waits on decode-0");
      decode.get(0).destroyForcibly().waitFor();
      for (Future<List<String>> f : streams) {
        List<String> lines = f.get(120, TimeUnit.SECONDS);
        assertThat(lines).as("a whole stream from decode-1").hasSizeGreaterThan(2);
        assertThat(lines.getLast()).isEqualTo("data: [DONE]");
        String usage = lines.get(lines.size() - 2);
        assertThat(transfer(usage.substring("data: ".length())).path("pages_fetched").asInt())
            .as("decode-1 fetched the handle's pages: %s", usage)
            .isPositive();
      }
      assertThat(router.retries(KvRouter.Pool.DECODE)).isPositive();
      assertThat(router.failures(KvRouter.Pool.DECODE)).containsExactly(1, 0);
      assertThat(Arrays.stream(router.routed(KvRouter.Pool.PREFILL)).sum())
          .as("each stream prefilled once: the retry reuses its handle")
          .isEqualTo(prefilled + 4);

      // 3. The last decode replica killed mid-stream: one error event ends the stream.
      HttpResponse<InputStream> begun =
          http.send(request(prompt(300, 32), true, 900), HttpResponse.BodyHandlers.ofInputStream());
      BufferedReader stream =
          new BufferedReader(new InputStreamReader(begun.body(), StandardCharsets.UTF_8));
      assertThat(stream.readLine()).startsWith("data: {");
      assertThat(holding(KvRouter.Pool.DECODE)).isEqualTo(1);
      signal(decode.get(1), "STOP");
      decode.get(1).destroyForcibly().waitFor();
      List<String> rest = lines(stream);
      assertThat(rest).as("the begun stream's end").isNotEmpty();
      assertThat(rest.getLast())
          .startsWith("data: {\"error\":")
          .contains("replica_failed")
          .doesNotContain("[DONE]");
    }

    // 4. No decode replica left: 503 naming the decode pool, before any prefill.
    long prefilled = Arrays.stream(router.routed(KvRouter.Pool.PREFILL)).sum();
    HttpResponse<String> noDecode = complete(prompt(400, 64));
    assertThat(noDecode.statusCode()).isEqualTo(503);
    assertThat(noDecode.body()).contains("no_decode_replica", "--decode");
    assertThat(Arrays.stream(router.routed(KvRouter.Pool.PREFILL)).sum()).isEqualTo(prefilled);
  }
}
