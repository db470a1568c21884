package io.kvtier.cli;

import static io.kvtier.cli.RankProcesses.await;
import static io.kvtier.cli.RankProcesses.awaitLine;
import static io.kvtier.cli.RankProcesses.awaitServing;
import static io.kvtier.cli.RankProcesses.output;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.server.CompletionServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Idle means idle (ARCHITECTURE.md §6, "Idle"): an idle {@code kvtier serve} of 2 ranks makes no
 * collective call, by its own {@code kvtier_collective_latency_seconds_count}, for longer than
 * its collective watchdog, on {@code local} (ranks as threads), {@code hazelcast} and {@code mpi}
 * (rank processes, as in {@link ServeRankProcessesTest}); a request after the idle spell is
 * answered before the watchdog would fire; and killing rank 0's process (SIGKILL) of an idle
 * group ends the follower's group within the watchdog bound, with an error naming rank 0 (under
 * mpirun: the whole job ends, mpirun naming rank 0).
 *
 * <p>The idle spell is the watchdog plus a second ({@code kvtier.collective-timeout} below, so
 * the spell outlasts it), at least {@code -Dkvtier.tests.idle-seconds} (default 3). Every other
 * wait is bounded; the bounds asserted are the protocol's (the watchdog), not timing figures.
 */
@Timeout(300)
class ServeIdleTest {
  private static final long HANG_GUARD_SECONDS = RankProcesses.HANG_GUARD_SECONDS;

  /** The watchdog of the rank processes: above Hazelcast's member timeout (5 s) below. */
  private static final int PROCESS_WATCHDOG_SECONDS = 10;

  private static final int LOCAL_WATCHDOG_SECONDS = 2;

  private static final Pattern CALLS =
      Pattern.compile("(?m)^kvtier_collective_latency_seconds_count\\{[^}]*} ([0-9.E+]+)$");

  private static final Pattern IDLE = Pattern.compile("(?m)^kvtier_engine_idle(\\{[^}]*})? 1\\.0$");

  private static final String REQUEST =
      "{\"model\": \"kvtier-tiny\", \"prompt\": \"idle means idle\", \"max_tokens\": 8}";

  @TempDir Path dir;

  private RankProcesses ranks;

  @BeforeEach
  void processes() {
    ranks = new RankProcesses(dir);
  }

  @AfterEach
  void killLeftovers() {
    ranks.close();
  }

  private Path config(int watchdogSeconds) throws IOException {
    Path config = dir.resolve("kvtier.properties");
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=24\nkvtier.host-pages=64\n"
            + "kvtier.collective-timeout="
            + watchdogSeconds
            + "s\n");
    return config;
  }

  private static long idleSeconds(int watchdogSeconds) {
    return Math.max(Long.getLong("kvtier.tests.idle-seconds", 3), watchdogSeconds + 1);
  }

  @Test
  void anIdleLocalGroupMakesNoCallsAndWakesForARequest() throws Exception {
    ServeCommand command = new ServeCommand();
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(out, true));
    AtomicInteger status = new AtomicInteger(-1);
    String[] args = {
      "--port", "0", "--config", config(LOCAL_WATCHDOG_SECONDS).toString(), "--ranks", "2"
    };
    Thread running = Thread.ofPlatform().start(() -> status.set(cli.execute(args)));
    CompletionServer server;
    while ((server = command.server()) == null) {
      assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
      Thread.sleep(5);
    }
    try {
      URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
      idleThenWake(base, LOCAL_WATCHDOG_SECONDS, "local");
    } finally {
      command.stop();
      running.join();
    }
    assertThat(status.get()).as(out.toString()).isZero();
  }

  @Test
  void anIdleHazelcastGroupMakesNoCallsWakesAndEndsWhenRankZeroIsKilled() throws Exception {
    List<Path> logs =
        ranks.startHazelcastRanks(
            serveOptions(config(PROCESS_WATCHDOG_SECONDS)), "kvtier-idle-test-");
    RankProcesses.Serving serving = awaitServing(ranks.process(0), logs.get(0));
    idleThenWake(serving.base(), PROCESS_WATCHDOG_SECONDS, "hazelcast");

    // Idle again, then rank 0's process dies: the follower learns it from Hazelcast's membership
    // (logged when found), then terminates its member (a broken group leaves no Raft waiting)
    // and exits.
    Thread.sleep(1_000);
    long killed = System.nanoTime();
    ranks.process(0).destroyForcibly();
    awaitLine(logs.get(1), "is gone: its Hazelcast member");
    long foundMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
    int status = await(ranks.process(1), logs.get(1));
    long exitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
    System.out.printf(
        "hazelcast: the follower found rank 0 gone %d ms after it was killed, exited after %d ms%n",
        foundMillis, exitedMillis);
    assertThat(foundMillis)
        .as("found within the watchdog bound; %s", output(logs.get(1)))
        .isLessThan(TimeUnit.SECONDS.toMillis(PROCESS_WATCHDOG_SECONDS));
    assertThat(exitedMillis)
        .as("exited within the watchdog bound; %s", output(logs.get(1)))
        .isLessThan(TimeUnit.SECONDS.toMillis(PROCESS_WATCHDOG_SECONDS));
    assertThat(status).as(output(logs.get(1))).isEqualTo(KvTierCli.EXIT_FAILURE);
    assertThat(output(logs.get(1)))
        .contains("kvtier serve: rank 0 failed at tick ")
        .contains("in step RECEIVE: rank 0 is gone: ")
        .contains("left the cluster");
  }

  @Test
  void anIdleMpiGroupMakesNoCallsWakesAndEndsWhenRankZeroIsKilled() throws Exception {
    Path log = dir.resolve("mpi.log");
    Process job = ranks.startMpiJob(serveOptions(config(PROCESS_WATCHDOG_SECONDS)), log);
    RankProcesses.Serving serving = awaitServing(job, log);
    idleThenWake(serving.base(), PROCESS_WATCHDOG_SECONDS, "mpi");

    // Idle again, then rank 0's process dies: mpirun ends the job (MPI's own abort).
    Thread.sleep(1_000);
    long killed = System.nanoTime();
    assertThat(ProcessHandle.of(serving.pid()).orElseThrow().destroyForcibly()).isTrue();
    int status = await(job, log);
    long endedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
    System.out.printf("mpi: the job ended %d ms after rank 0 was killed%n", endedMillis);
    assertThat(status).as(output(log)).isNotZero();
    assertThat(output(log)).containsPattern("rank 0");
    assertThat(endedMillis)
        .as("ended within the watchdog bound; %s", output(log))
        .isLessThan(TimeUnit.SECONDS.toMillis(PROCESS_WATCHDOG_SECONDS));
  }

  /**
   * One request (the group has ticked), an idle spell longer than the watchdog with no call, then
   * a request answered before the watchdog would fire.
   */
  private static void idleThenWake(URI base, int watchdogSeconds, String collective)
      throws Exception {
    try (HttpClient client = HttpClient.newHttpClient()) {
      assertThat(complete(client, base).statusCode()).isEqualTo(200);
      // The answer may reach the client before the group's last ticks (a backup committing):
      // the idle spell starts once rank 0 has parked.
      awaitIdle(client, base);
      long before = calls(client, base);
      long idle = idleSeconds(watchdogSeconds);
      Thread.sleep(TimeUnit.SECONDS.toMillis(idle));
      long after = calls(client, base);
      System.out.printf(
          "%s: %d collective calls in %d s idle (%d before it)%n",
          collective, after - before, idle, before);
      assertThat(after - before).as("collective calls of an idle %d s", idle).isZero();

      long woken = System.nanoTime();
      HttpResponse<String> answer = complete(client, base);
      long answeredMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - woken);
      System.out.printf(
          "%s: a request after the idle spell answered in %d ms%n", collective, answeredMillis);
      assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
      assertThat(answeredMillis)
          .as("answered before the watchdog")
          .isLessThan(TimeUnit.SECONDS.toMillis(watchdogSeconds));
      assertThat(calls(client, base)).as("the request ticked the group").isGreaterThan(after);
    }
  }

  private static HttpResponse<String> complete(HttpClient client, URI base) throws Exception {
    return client.send(
        HttpRequest.newBuilder(base.resolve("/v1/completions"))
            .timeout(Duration.ofSeconds(HANG_GUARD_SECONDS))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(REQUEST))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** Waits, bounded, until rank 0 reports the group idle ({@code kvtier_engine_idle 1}). */
  private static void awaitIdle(HttpClient client, URI base) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
    String scrape;
    while (!IDLE.matcher(scrape = scrape(client, base)).find()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the group never went idle: " + scrape);
      }
      Thread.sleep(20);
    }
  }

  private static String scrape(HttpClient client, URI base) throws Exception {
    return client
        .send(
            HttpRequest.newBuilder(base.resolve("/metrics")).GET().build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  /** The collective calls so far, every op, tag and outcome: the sum of the timer's counts. */
  private static long calls(HttpClient client, URI base) throws Exception {
    String scrape = scrape(client, base);
    Matcher m = CALLS.matcher(scrape);
    long sum = 0;
    boolean any = false;
    while (m.find()) {
      sum += (long) Double.parseDouble(m.group(1));
      any = true;
    }
    assertThat(any).as("no kvtier_collective_latency_seconds_count in %s", scrape).isTrue();
    return sum;
  }

  private static List<String> serveOptions(Path config) {
    return List.of("serve", "--port", "0", "--config", config.toString());
  }
}
