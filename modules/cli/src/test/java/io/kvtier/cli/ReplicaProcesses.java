package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.route.ReplicaSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Real {@code kvtier serve} processes publishing KV events over ZeroMQ, for the tests that put
 * {@code kvtier route} in front of them and freeze or kill them ({@code RouteReplicaFailureTest},
 * {@code PdRouteKillTest}): each runs {@link KvTierCli} in the small JVM of {@link
 * SimulateRankProcessesTest#java()} (this test JVM's class path) with its log in the test's directory. Every wait is bounded
 * (120 s) and a failed one prints the test's view and every replica's log; {@link #close} kills
 * every process started.
 */
final class ReplicaProcesses implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on (http://[0-9.]+:[0-9]+)");

  private final Path dir;
  private final Supplier<String> view;
  private final List<Process> processes = new ArrayList<>();

  /**
   * @param dir where the replicas' logs go ({@code NAME.log})
   * @param view what the test sees (the router's state), printed before the logs when a wait fails
   */
  ReplicaProcesses(Path dir, Supplier<String> view) {
    this.dir = dir;
    this.view = view;
  }

  /** One replica's fixed ports, so that it can come back on the same addresses. */
  record Ports(int http, int events, int replay) {
    static Ports free() throws IOException {
      return new Ports(freePort(), freePort(), freePort());
    }

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

  /**
   * Starts {@code kvtier serve --port PORTS.http OPTIONS...} publishing its events on the ports'
   * endpoints, its output in {@code NAME.log}; waits until it listens.
   */
  Process serve(String name, Ports ports, String... options)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(SimulateRankProcessesTest.java());
    // Where the replica publishes its events: JVM properties, before the main class.
    command.addAll(
        1,
        List.of(
            "-Dkvtier.events.publisher=zmq",
            "-Dkvtier.events.endpoint=tcp://*:" + ports.events(),
            "-Dkvtier.events.replay-endpoint=tcp://127.0.0.1:" + ports.replay()));
    command.addAll(List.of("serve", "--port", Integer.toString(ports.http())));
    command.addAll(List.of(options));
    Path log = dir.resolve(name + ".log");
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
        name + " starts");
    assertThat(LISTENING.matcher(Files.readString(log)).find())
        .as("%s's log: %s", name, Files.readString(log))
        .isTrue();
    return p;
  }

  /** Waits up to 120 s for {@code condition}; fails with the test's view and the logs. */
  void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat(condition.getAsBoolean()).as(() -> what + state()).isTrue();
  }

  /** What a failed wait prints: the test's view and the replicas' logs. */
  private String state() {
    StringBuilder b = new StringBuilder(view.get());
    try (var logs = Files.list(dir)) {
      for (Path log : logs.filter(p -> p.toString().endsWith(".log")).sorted().toList()) {
        b.append("\n--- ").append(log.getFileName()).append(":\n").append(Files.readString(log));
      }
    } catch (IOException e) {
      b.append("; logs unreadable: ").append(e);
    }
    return b.toString();
  }

  /** A prompt of {@code bytes} letters, distinct per salt. */
  static String prompt(int salt, int bytes) {
    Random random = new Random(salt);
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < bytes; i++) {
      s.append((char) ('a' + random.nextInt(26)));
    }
    return s.toString();
  }

  /**
   * A {@code POST /v1/completions} of the tiny model to the router on {@code port}.
   *
   * @param fields more members of the body, each with its leading comma, or ""
   */
  static HttpRequest completion(
      int port, String prompt, int maxTokens, boolean stream, String fields) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
        .POST(
            HttpRequest.BodyPublishers.ofString(
                "{\"model\":\"kvtier-tiny\",\"prompt\":\""
                    + prompt
                    + "\",\"max_tokens\":"
                    + maxTokens
                    + ",\"stream\":"
                    + stream
                    + fields
                    + "}"))
        .build();
  }

  /** The non-blank lines of a streamed completion, to its end. */
  static List<String> lines(BufferedReader stream) throws IOException {
    List<String> lines = new ArrayList<>();
    for (String line; (line = stream.readLine()) != null; ) {
      if (!line.isBlank()) {
        lines.add(line);
      }
    }
    return lines;
  }

  /** Sends {@code kill -SIGNAL} to a replica ({@code STOP} freezes it). */
  static void signal(Process p, String signal) throws Exception {
    assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start().waitFor())
        .isZero();
  }

  /** Kills every replica started. */
  @Override
  public void close() {
    for (Process p : processes) {
      p.destroyForcibly();
    }
  }
}
