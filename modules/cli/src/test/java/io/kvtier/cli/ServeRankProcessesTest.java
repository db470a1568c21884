package io.kvtier.cli;

import static io.kvtier.cli.RankProcesses.await;
import static io.kvtier.cli.RankProcesses.awaitLine;
import static io.kvtier.cli.RankProcesses.awaitServing;
import static io.kvtier.cli.RankProcesses.output;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier serve} with one rank per process: 2 processes under {@code mpirun} over the {@code
 * mpi} collective and 2 processes over {@code hazelcast} (an embedded member each, on loopback).
 * Rank 0 serves HTTP; the same requests must get the same completions, token for token, as a
 * one-rank server; stopping rank 0's process must end every rank with status 0; killing the
 * follower must turn rank 0's running request into a 503 naming the failure and end rank 0 with
 * status 1, never a hang.
 *
 * <p>The processes run {@link KvTierCli} on this test JVM's class path, as in {@link
 * SimulateRankProcessesTest}. Every wait is bounded; none is a timing assertion.
 */
@Timeout(300)
class ServeRankProcessesTest {
  /** Bound on one wait for a process: past it, the process hangs. */
  private static final long HANG_GUARD_SECONDS = RankProcesses.HANG_GUARD_SECONDS;

  /**
   * Completions and chats: a text, a second text sharing its prefix (a cache hit), token ids,
   * two prompts in one request, a chat.
   */
  private static final List<String> REQUESTS =
      List.of(
          "/v1/completions {\"model\": \"kvtier-tiny\", \"prompt\": \"The quick brown fox jumps"
              + " over the lazy dog\", \"max_tokens\": 12}",
          "/v1/completions {\"model\": \"kvtier-tiny\", \"prompt\": \"The quick brown fox jumps"
              + " over the lazy dog, again and again\", \"max_tokens\": 12}",
          "/v1/completions {\"model\": \"kvtier-tiny\", \"prompt\": [1, 2, 3, 4, 5, 6, 7, 8, 9,"
              + " 10, 11, 12, 13, 14, 15, 16, 17], \"max_tokens\": 10}",
          "/v1/completions {\"model\": \"kvtier-tiny\", \"prompt\": [\"hello\", \"hello world\"],"
              + " \"max_tokens\": 6}",
          "/v1/chat/completions {\"model\": \"kvtier-tiny\", \"messages\": [{\"role\": \"user\","
              + " \"content\": \"hi there\"}], \"max_tokens\": 8}",
          // Sampled: every rank process draws the seed's tokens (the broadcast carries them).
          "/v1/completions {\"model\": \"kvtier-tiny\", \"prompt\": \"The quick brown fox\","
              + " \"max_tokens\": 12, \"temperature\": 0.9, \"top_p\": 0.9, \"top_k\": 50,"
              + " \"seed\": 5}");

  @TempDir Path dir;

  private Path config;
  private RankProcesses ranks;

  @BeforeEach
  void writeConfig() throws IOException {
    ranks = new RankProcesses(dir);
    config = dir.resolve("kvtier.properties");
    // Small pools of 4-token pages: the requests share and evict pages.
    Files.writeString(
        config,
        "kvtier.device=sim\nkvtier.host=sim\nkvtier.page-size=4\n"
            + "kvtier.device-pages=24\nkvtier.host-pages=64\n");
  }

  @AfterEach
  void killLeftovers() {
    ranks.close();
  }

  /** Rank 0 and rank 1 over hazelcast with the third CP member; the ranks' logs. */
  private List<Path> startHazelcastRanks(List<String> more) throws IOException {
    List<String> serve = new ArrayList<>(serveOptions());
    serve.addAll(more);
    return ranks.startHazelcastRanks(serve, "kvtier-serve-test-");
  }

  @Test
  void twoMpiRankProcessesServeTheOneRankCompletionsAndStopWithRankZero() throws Exception {
    RankProcesses.mpirun(); // skips here, before the one-rank run, without mpirun
    Map<String, Object> oneRank = oneRankCompletions();

    Path log = dir.resolve("mpi.log");
    Process job = ranks.startMpiJob(serveOptions(), log);
    RankProcesses.Serving serving = awaitServing(job, log);

    assertThat(completions(serving.base())).as(output(log)).isEqualTo(oneRank);

    // SIGTERM to rank 0 alone: it stops gracefully and its close ends rank 1.
    assertThat(ProcessHandle.of(serving.pid()).orElseThrow().destroy()).isTrue();
    assertThat(await(job, log)).as("mpirun's exit status; %s", output(log)).isZero();
    assertThat(output(log))
        // The request of two prompts counts as two.
        .contains("kvtier serve: stopped after " + (REQUESTS.size() + 1) + " requests")
        .contains("kvtier serve: rank 1 ends with its group: rank 0 stopped serving");
  }

  @Test
  void twoHazelcastRankProcessesServeTheOneRankCompletionsAndStopWithRankZero() throws Exception {
    Map<String, Object> oneRank = oneRankCompletions();
    List<Path> logs = startHazelcastRanks(List.of());
    RankProcesses.Serving serving = awaitServing(ranks.process(0), logs.get(0));

    assertThat(completions(serving.base())).as(output(logs.get(0))).isEqualTo(oneRank);

    // A signal to the follower alone only makes it wait for rank 0.
    assertThat(ranks.process(1).toHandle().destroy()).isTrue();
    awaitLine(logs.get(1), "kvtier serve: rank 1 stops when rank 0 stops the group");
    assertThat(ranks.process(1).isAlive()).as(output(logs.get(1))).isTrue();
    assertThat(completions(serving.base())).as("still served").isEqualTo(oneRank);
    assertThat(ranks.process(0).toHandle().destroy()).isTrue();
    assertThat(await(ranks.process(0), logs.get(0))).as(output(logs.get(0))).isZero();
    assertThat(await(ranks.process(1), logs.get(1))).as(output(logs.get(1))).isZero();
    assertThat(output(logs.get(1)))
        .contains("kvtier serve: rank 1 ends with its group: rank 0 stopped serving");
  }

  @Test
  void killingTheFollowerProcessAnswers503WithTheCauseAndEndsRankZero() throws Exception {
    // One request at a time: of several long requests, one runs and the others wait, so that
    // some are still in the engine when the follower dies however fast the ticks are; a device
    // pool of the model's whole context (1024 tokens), which bounds a request.
    List<Path> logs = startHazelcastRanks(List.of("--max-running", "1", "--device-pages", "256"));
    RankProcesses.Serving serving = awaitServing(ranks.process(0), logs.get(0));

    List<HttpResponse<String>> answers = new ArrayList<>();
    try (HttpClient client = HttpClient.newHttpClient()) {
      List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
      for (int i = 1; i <= 6; i++) {
        sent.add(
            client.sendAsync(
                post(
                    serving.base(),
                    "/v1/completions",
                    "{\"model\": \"kvtier-tiny\", \"prompt\": ["
                        + i
                        + ", 2, 3],"
                        + " \"max_tokens\": 1000}"),
                HttpResponse.BodyHandlers.ofString()));
      }
      awaitRunning(client, serving.base(), sent.getLast(), logs.get(0));
      ranks.process(1).destroyForcibly();
      for (CompletableFuture<HttpResponse<String>> s : sent) {
        answers.add(s.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS));
      }
    }

    // Those that finished before the kill are 200s; every other one a 503 with the cause.
    List<HttpResponse<String>> failed =
        answers.stream().filter(a -> a.statusCode() != 200).toList();
    assertThat(failed).as("the answers after the kill").isNotEmpty();
    assertThat(failed).allSatisfy(a -> assertThat(a.statusCode()).as(a.body()).isEqualTo(503));
    Map<String, Object> error = errorOf(failed.getFirst().body());
    assertThat(error)
        .as(failed.getFirst().body())
        .containsEntry("code", "rank_group_failed")
        .containsEntry("type", "server_error");
    assertThat((String) error.get("message"))
        .startsWith("the engine's rank group failed and the server is stopping: ");
    assertThat(await(ranks.process(0), logs.get(0)))
        .as("rank 0's exit status; %s", output(logs.get(0)))
        .isEqualTo(KvTierCli.EXIT_FAILURE);
    assertThat(output(logs.get(0))).contains("kvtier serve: stopped: ");
  }

  /**
   * Under mpirun a rank process that ends on its own ends the whole job (mpirun's rule, usually
   * before rank 0 can answer): the running request ends, its connection closed (or a 503 if rank
   * 0 answered first), and mpirun exits non-zero; nothing waits forever. The follower is ended by
   * a second signal (the first only makes it wait for rank 0), the way out of a follower whose
   * rank 0 is gone; a killed one (SIGKILL) is the hazelcast test's, and mpirun's own rule here.
   */
  @Test
  void underMpirunAFollowerEndedByASecondSignalEndsTheJobWithoutHanging() throws Exception {
    List<String> serve = new ArrayList<>(serveOptions());
    serve.addAll(List.of("--max-running", "1", "--device-pages", "256"));
    Path log = dir.resolve("mpi.log");
    Process job = ranks.startMpiJob(serve, log);
    RankProcesses.Serving serving = awaitServing(job, log);
    ProcessHandle follower =
        job.descendants()
            .filter(p -> p.pid() != serving.pid())
            .filter(p -> p.info().command().orElse("").endsWith("java"))
            .findFirst()
            .orElseThrow(
                () -> new AssertionError("no rank 1 process under mpirun; " + output(log)));

    try (HttpClient client = HttpClient.newHttpClient()) {
      CompletableFuture<HttpResponse<String>> running =
          client.sendAsync(
              post(
                  serving.base(),
                  "/v1/completions",
                  "{\"model\": \"kvtier-tiny\", \"prompt\": [1, 2, 3], \"max_tokens\": 1000}"),
              HttpResponse.BodyHandlers.ofString());
      awaitRunning(client, serving.base(), running, log);
      assertThat(follower.destroy()).isTrue();
      awaitLine(log, "kvtier serve: rank 1 stops when rank 0 stops the group");
      assertThat(follower.destroy()).isTrue();

      HttpResponse<String> answer;
      try {
        answer = running.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
      } catch (ExecutionException closed) {
        // mpirun ended rank 0 before it could answer: the connection closed.
        answer = null;
      }
      if (answer != null) {
        assertThat(answer.statusCode()).as(answer.body()).isEqualTo(503);
      }
    }
    assertThat(await(job, log)).as("mpirun's exit status; %s", output(log)).isNotZero();
  }

  /** Waits until rank 0 reports the request running (its /health), or fails if it ended. */
  private static void awaitRunning(
      HttpClient client, URI base, CompletableFuture<HttpResponse<String>> request, Path log)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
    while (System.nanoTime() < deadline) {
      assertThat(request.isDone())
          .as(
              "the request ended before it was seen running: %s",
              request.isDone() ? request.join().body() : "")
          .isFalse();
      HttpResponse<String> health =
          client.send(
              HttpRequest.newBuilder(base.resolve("/health")).GET().build(),
              HttpResponse.BodyHandlers.ofString());
      @SuppressWarnings("unchecked")
      Map<String, Object> body = (Map<String, Object>) TestJson.parse(health.body());
      if (((Number) body.get("running")).longValue() > 0) {
        return;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("the request never ran; " + output(log));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> errorOf(String body) {
    return (Map<String, Object>) ((Map<String, Object>) TestJson.parse(body)).get("error");
  }

  private List<String> serveOptions() {
    return List.of("serve", "--port", "0", "--config", config.toString());
  }

  /** The completions of {@link #REQUESTS} from a one-rank server in this JVM. */
  private Map<String, Object> oneRankCompletions() throws Exception {
    return ServedCompletions.ofOneRank(serveOptions().subList(1, serveOptions().size()), REQUESTS);
  }

  private static Map<String, Object> completions(URI base) throws Exception {
    return ServedCompletions.of(base, REQUESTS);
  }

  private static HttpRequest post(URI base, String path, String body) {
    return ServedCompletions.post(base, path, body);
  }
}
