package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.route.KvRouter;
import io.kvtier.route.PrefixIndex;
import io.kvtier.route.ReplicaSpec;
import io.kvtier.route.RoutePolicy;
import io.kvtier.route.RouteScore;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
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
 * <p>The replicas run {@link KvTierCli} on this test JVM's class path, as in {@code
 * SimulateRankProcessesTest}.
 */
@Timeout(300)
class RouteReplicaFailureTest {
  private static final Pattern LISTENING = Pattern.compile("listening on (http://[0-9.]+:[0-9]+)");
  private static final int REPLICAS = 3;

  @TempDir Path dir;

  private final List<Process> processes = new ArrayList<>();
  private final HttpClient http =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private KvRouter router;

  @AfterEach
  void stop() {
    if (router != null) {
      router.close();
    }
    for (Process p : processes) {
      p.destroyForcibly();
    }
  }

  /** One replica's fixed ports, so that it can come back on the same addresses. */
  private record Ports(int http, int events, int replay) {
    ReplicaSpec spec() {
      return new ReplicaSpec(
          URI.create("http://127.0.0.1:" + http),
          "tcp://127.0.0.1:" + events,
          Optional.of("tcp://127.0.0.1:" + replay));
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private Process serve(int i, Ports ports) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(
        List.of(
            "-Xss4m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "--enable-native-access=ALL-UNNAMED",
            "-Dkvtier.events.publisher=zmq",
            "-Dkvtier.events.endpoint=tcp://*:" + ports.events(),
            "-Dkvtier.events.replay-endpoint=tcp://127.0.0.1:" + ports.replay(),
            "-cp",
            classPath(),
            KvTierCli.class.getName(),
            "serve",
            "--port",
            Integer.toString(ports.http()),
            "--device-pages",
            "64",
            "--host-pages",
            "64"));
    Path log = dir.resolve("replica-" + i + "-" + processes.size() + ".log");
    Process p =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    await(
        () -> {
          try {
            return LISTENING.matcher(Files.readString(log)).find() || !p.isAlive();
          } catch (IOException e) {
            return false;
          }
        },
        "replica " + i + " starts");
    Matcher m = LISTENING.matcher(Files.readString(log));
    assertThat(m.find()).as("replica %d's log: %s", i, Files.readString(log)).isTrue();
    return p;
  }

  private static String classPath() {
    List<String> entries = new ArrayList<>();
    entries.add(Path.of("target", "classes").toAbsolutePath().toString());
    for (String property : List.of("jdk.module.path", "java.class.path")) {
      for (String entry : System.getProperty(property, "").split(File.pathSeparator)) {
        if (!entry.isBlank() && !entries.contains(entry) && !entry.contains("surefire")) {
          entries.add(entry);
        }
      }
    }
    return String.join(File.pathSeparator, entries);
  }

  private void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(condition.getAsBoolean()).as(() -> what + state()).isTrue();
  }

  /** What a failed wait prints: the router's view and the replicas' logs. */
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
    try (var logs = Files.list(dir)) {
      for (Path log : logs.sorted().toList()) {
        b.append("\n--- ").append(log.getFileName()).append(":\n").append(Files.readString(log));
      }
    } catch (IOException e) {
      b.append("; logs unreadable: ").append(e);
    }
    return b.toString();
  }

  private HttpRequest request(String prompt, boolean stream, int maxTokens) {
    return HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + router.port() + "/v1/completions"))
        .POST(
            HttpRequest.BodyPublishers.ofString(
                "{\"model\":\"kvtier-tiny\",\"prompt\":\""
                    + prompt
                    + "\",\"max_tokens\":"
                    + maxTokens
                    + ",\"stream\":"
                    + stream
                    + "}"))
        .build();
  }

  private int complete(String prompt) throws Exception {
    return http.send(request(prompt, false, 4), HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  /** A prompt of {@code bytes} letters, distinct per salt. */
  private static String prompt(int salt, int bytes) {
    java.util.Random random = new java.util.Random(salt);
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < bytes; i++) {
      s.append((char) ('a' + random.nextInt(26)));
    }
    return s.toString();
  }

  private static void signal(Process p, String signal) throws Exception {
    assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start().waitFor())
        .isZero();
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
      ports.add(new Ports(freePort(), freePort(), freePort()));
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
    await(
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
      await(() -> router.inFlight()[v] >= 1 + 4, "the requests wait on the frozen replica");
      replica.get(v).destroyForcibly().waitFor();

      for (Future<Integer> f : waiting) {
        assertThat(f.get(120, TimeUnit.SECONDS)).as("a request retried elsewhere").isEqualTo(200);
      }
      assertThat(router.retries()).isGreaterThanOrEqualTo(4);
      List<String> rest = new ArrayList<>();
      for (String line; (line = stream.readLine()) != null; ) {
        if (!line.isBlank()) {
          rest.add(line);
        }
      }
      assertThat(rest).as("the begun stream's end").isNotEmpty();
      assertThat(rest.getLast())
          .startsWith("data: {\"error\":")
          .contains("replica_failed")
          .doesNotContain("[DONE]");
    }
    assertThat(router.healthy()[v]).isFalse();
    await(() -> cachedBlocks(v) == 0, "the dead replica's blocks forgotten");
    for (int i = 0; i < 6; i++) {
      assertThat(complete(prompt(200 + i, 64))).as("served by the others").isEqualTo(200);
    }
    assertThat(router.routed()[v]).isEqualTo(routedBefore + 1);

    // It comes back on the same addresses: the health check returns it to the rotation, and the
    // events of its new life (from AllBlocksCleared on) fill the index again.
    replica.set(v, serve(v, ports.get(v)));
    await(() -> router.healthy()[v], "the replica back in rotation");
    long routedAgain = router.routed()[v];
    for (int i = 0; i < 12 && router.routed()[v] == routedAgain; i++) {
      assertThat(complete(prompt(300 + i, 64))).isEqualTo(200);
    }
    assertThat(router.routed()[v]).as("requests reach it again").isGreaterThan(routedAgain);
    await(() -> cachedBlocks(v) > 0, "its new blocks indexed");
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
