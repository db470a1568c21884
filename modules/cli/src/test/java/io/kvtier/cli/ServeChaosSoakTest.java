package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.server.CompletionServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A short chaos soak, not in the default suite: {@code -Dkvtier.tests.soak-seconds=60} runs it for
 * that long (scripts/chaos-soak.sh is the long one, with memory and open files; docs/PERFORMANCE.md,
 * "Chaos soak"). Two {@code kvtier serve} of 2 ranks in this JVM: a reference with the cache off,
 * and a chaos server whose copies fail, whose host pages flip at rest, and whose L3 store (the
 * testing store {@code faulty}) drops pages, fails reads, throws and is slow. Concurrent
 * multi-turn conversations of token ids go to both; every chaos answer must equal the
 * reference's token for token, no request may fail, and the chaos server's metrics must show the
 * faults were met (so that a passing soak is not a soak without faults).
 */
class ServeChaosSoakTest {

  /** The system property of the soak's length in seconds; absent or empty: skipped. */
  static final String SECONDS = "kvtier.tests.soak-seconds";

  private static final Pattern TOKEN_IDS = Pattern.compile("\"token_ids\":\\[([0-9,]*)\\]");
  private static final Pattern FINISH = Pattern.compile("\"finish_reason\":\"([a-z]+)\"");

  @Test
  void everyAnswerUnderCopyFailuresHostFlipsAndAFaultySlowStoreEqualsTheReference(@TempDir Path dir)
      throws Exception {
    Soak soak = soak(dir, seconds(), List.of(), List.of());
    assertThat(soak.failed).as("failed requests").isEmpty();
    assertThat(soak.wrong).as("answers unlike the cache-off reference's").isEmpty();
    assertThat(soak.requests.get()).isPositive();
    assertThat(soak.cached.get()).as("prompt tokens served from the cache").isPositive();
    assertThat(soak.counter("kvtier_cache_loads_total{outcome=\"failed\"}"))
        .as("failed load-backs (copy failures and flips)")
        .isPositive();
    assertThat(soak.counter("kvtier_cache_restore_checks_total{outcome=\"mismatch\"}"))
        .as("host flips caught by CRC32C")
        .isPositive();
    assertThat(soak.l3Faults()).as("faults the L3 store injected").isPositive();
    assertThat(soak.counter("kvtier_requests_failed_total{reason=\"load_failed\"}")).isZero();
  }

  /** The soak's own check: requests that a cache fault ends are failures it reports. */
  @Test
  void requestsEndedByACacheFaultAreReportedAsFailed(@TempDir Path dir) throws Exception {
    Soak soak = soak(dir, Math.min(seconds(), 15), List.of(), List.of("--on-load-failure", "fail"));
    assertThat(soak.failed)
        .as("--on-load-failure fail ends the requests whose load-back failed")
        .isNotEmpty()
        .allSatisfy(f -> assertThat(f).contains("503").contains("load-back"));
  }

  /** The soak's own check: answers of other weights than the reference's are wrong answers. */
  @Test
  void answersOfOtherWeightsAreReportedAsWrong(@TempDir Path dir) throws Exception {
    Soak soak = soak(dir, Math.min(seconds(), 10), List.of("--model-seed", "43"), List.of());
    assertThat(soak.wrong).isNotEmpty();
  }

  /** The soak's length, in seconds; skips the test without {@value #SECONDS}. */
  private static double seconds() {
    String seconds = System.getProperty(SECONDS, "");
    assumeTrue(
        !seconds.isBlank(),
        "the chaos soak runs only when asked: -D" + SECONDS + "=60 (scripts/chaos-soak.sh)");
    return Double.parseDouble(seconds);
  }

  /** What a soak saw. */
  private record Soak(
      ConcurrentLinkedQueue<String> wrong,
      ConcurrentLinkedQueue<String> failed,
      AtomicInteger requests,
      AtomicLong cached,
      String metrics) {
    long counter(String series) {
      return ServeChaosSoakTest.counter(metrics, series);
    }

    long l3Faults() {
      return counter("kvtier_store_faulty_dropped_total")
          + counter("kvtier_store_faulty_failed_total")
          + counter("kvtier_store_faulty_thrown_total");
    }
  }

  /**
   * Runs 4 concurrent conversations against a reference and a chaos server for {@code seconds}.
   *
   * @param referenceOptions more options of the reference server
   * @param chaosOptions more options of the chaos server
   */
  private static Soak soak(
      Path dir, double seconds, List<String> referenceOptions, List<String> chaosOptions)
      throws Exception {
    long millis = Math.round(seconds * 1000);
    Path config = dir.resolve("chaos.properties");
    Files.writeString(
        config,
        """
        sim.failure-probability=0.1
        sim.flip-probability=0.15
        sim.seed=7
        faulty.probability=0.1
        faulty.throw-probability=0.05
        faulty.slow-delay=1ms
        faulty.seed=7
        """);
    List<String> referenceArgs =
        new ArrayList<>(
            List.of("--no-prefix-cache", "--ranks", "2", "--max-running", "4", "--queue", "64"));
    referenceArgs.addAll(referenceOptions);
    Served reference = Served.start(referenceArgs.toArray(String[]::new));
    List<String> chaosArgs =
        new ArrayList<>(
            List.of(
                "--ranks",
                "2",
                "--device-pages",
                "48",
                "--host-pages",
                "64",
                "--max-running",
                "3",
                "--queue",
                "64",
                "--l3",
                "faulty",
                "--l3-prefetch-threshold",
                "16",
                "--config",
                config.toString()));
    chaosArgs.addAll(chaosOptions);
    Served chaos = Served.start(chaosArgs.toArray(String[]::new));
    Map<List<Long>, String> expected = new ConcurrentHashMap<>();
    ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<String> failed = new ConcurrentLinkedQueue<>();
    AtomicInteger requests = new AtomicInteger();
    AtomicLong cached = new AtomicLong();
    String metrics;
    try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build()) {
      long deadline = System.nanoTime() + millis * 1_000_000;
      List<Thread> clients = new ArrayList<>();
      for (int c = 0; c < 4; c++) {
        int client = c;
        clients.add(
            Thread.ofPlatform()
                .start(
                    () -> {
                      Random random = new Random(1000L + client);
                      while (System.nanoTime() < deadline) {
                        // One of 12 conversations that come back, or a new one.
                        long script =
                            random.nextInt(4) == 0
                                ? 1000 + random.nextInt(1 << 20)
                                : random.nextInt(12);
                        Random turns = new Random(script);
                        List<Long> prompt = new ArrayList<>(words(new Random(script % 3), 48));
                        for (int turn = turns.nextInt(2, 6); turn > 0; turn--) {
                          if (System.nanoTime() >= deadline) {
                            return;
                          }
                          prompt.addAll(words(turns, turns.nextInt(12, 32)));
                          if (prompt.size() + 12 > 256) {
                            break;
                          }
                          List<Long> key = List.copyOf(prompt);
                          String want;
                          String got;
                          try {
                            got = complete(http, chaos.base, key, failed);
                            want = expected.get(key);
                            if (want == null) {
                              want = complete(http, reference.base, key, failed);
                              if (want != null) {
                                expected.putIfAbsent(key, want);
                              }
                            }
                          } catch (RuntimeException e) {
                            failed.add(e.toString());
                            break;
                          }
                          requests.incrementAndGet();
                          if (got == null || want == null) {
                            break;
                          }
                          cached.addAndGet(number(got, "\"cached_tokens\":(\\d+)"));
                          String answer = answerOf(got);
                          if (!answer.equals(answerOf(want))) {
                            wrong.add(
                                key.size() + " prompt tokens: " + answer + " != " + answerOf(want));
                          }
                          for (String id : idsOf(want).split(",")) {
                            if (!id.isEmpty()) {
                              prompt.add(Long.parseLong(id));
                            }
                          }
                        }
                      }
                    }));
      }
      for (Thread t : clients) {
        t.join();
      }
      metrics =
          http.send(
                  HttpRequest.newBuilder(chaos.base.resolve("/metrics")).GET().build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
    } finally {
      chaos.stop();
      reference.stop();
    }
    Soak soak = new Soak(wrong, failed, requests, cached, metrics);
    System.out.printf(
        "chaos soak: %s s, %d requests, %d cached tokens, %d wrong, %d failed; loads failed %d,"
            + " host flips caught %d, backups failed %d, L3 faults injected %d%n",
        seconds,
        requests.get(),
        cached.get(),
        wrong.size(),
        failed.size(),
        soak.counter("kvtier_cache_loads_total{outcome=\"failed\"}"),
        soak.counter("kvtier_cache_restore_checks_total{outcome=\"mismatch\"}"),
        soak.counter("kvtier_cache_backups_total{outcome=\"failed\"}"),
        soak.l3Faults());
    return soak;
  }

  /** n token ids of a user turn: mostly printable bytes, some special ids. */
  private static List<Long> words(Random random, int n) {
    List<Long> ids = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      ids.add(random.nextInt(10) < 9 ? 32L + random.nextInt(95) : 256L + random.nextInt(256));
    }
    return ids;
  }

  /** The body of a 200 answer, or null after recording a failure. */
  private static String complete(
      HttpClient http, URI base, List<Long> prompt, ConcurrentLinkedQueue<String> failed) {
    try {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(base.resolve("/v1/completions"))
                  .timeout(Duration.ofMinutes(2))
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"model\": \"kvtier-tiny\", \"prompt\": "
                              + prompt.toString().replace(" ", "")
                              + ", \"max_tokens\": 12, \"temperature\": 0}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        failed.add(base + ": HTTP " + r.statusCode() + " " + r.body());
        return null;
      }
      return r.body();
    } catch (Exception e) {
      failed.add(base + ": " + e);
      return null;
    }
  }

  private static String idsOf(String body) {
    Matcher m = TOKEN_IDS.matcher(body);
    assertThat(m.find()).as("token_ids in %s", body).isTrue();
    return m.group(1);
  }

  private static String answerOf(String body) {
    Matcher m = FINISH.matcher(body);
    return idsOf(body) + " " + (m.find() ? m.group(1) : "?");
  }

  private static long number(String body, String regex) {
    Matcher m = Pattern.compile(regex).matcher(body);
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  private static long counter(String exposition, String series) {
    return exposition
        .lines()
        .filter(l -> l.startsWith(series + " "))
        .findFirst()
        .map(l -> (long) Double.parseDouble(l.substring(series.length() + 1).strip()))
        .orElse(0L);
  }

  /** A kvtier serve in this JVM, on a free port. */
  private record Served(
      ServeCommand command, Thread running, AtomicInteger status, StringWriter out, URI base) {
    static Served start(String... options) throws InterruptedException {
      ServeCommand command = new ServeCommand();
      StringWriter out = new StringWriter();
      CommandLine cli = new CommandLine(command);
      cli.setOut(new PrintWriter(out, true));
      cli.setErr(new PrintWriter(out, true));
      List<String> args = new ArrayList<>(List.of("--port", "0"));
      args.addAll(List.of(options));
      AtomicInteger status = new AtomicInteger(-1);
      Thread running =
          Thread.ofPlatform().start(() -> status.set(cli.execute(args.toArray(String[]::new))));
      CompletionServer server;
      while ((server = command.server()) == null) {
        assertThat(running.isAlive()).as("serve exited early: %s", out).isTrue();
        Thread.sleep(5);
      }
      return new Served(
          command,
          running,
          status,
          out,
          URI.create("http://127.0.0.1:" + server.address().getPort()));
    }

    void stop() throws InterruptedException {
      command.stop();
      running.join();
      assertThat(status.get()).as("serve's exit status: %s", out).isZero();
    }
  }
}
