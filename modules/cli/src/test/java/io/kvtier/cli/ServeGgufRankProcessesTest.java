package io.kvtier.cli;

import static io.kvtier.cli.RankProcesses.await;
import static io.kvtier.cli.RankProcesses.awaitServing;
import static io.kvtier.cli.RankProcesses.output;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvtier serve --model FILE.gguf} with one rank per process: stories260K (4 KV heads, 2
 * per rank) on 2 processes under {@code mpirun} over the {@code mpi} collective, and on 2
 * processes over {@code hazelcast}, must answer the same greedy completions, token for token, as
 * a one-rank server of the same file; each layer's partial sums then cross between processes.
 * Stopping rank 0's process ends the group with status 0.
 *
 * <p>Skips, saying why, without {@code ../shared} (the model), and the {@code mpi} part without
 * {@code mpirun} or {@code libmpi}. Every wait is bounded; none is a timing assertion.
 */
@Timeout(300)
class ServeGgufRankProcessesTest {
  private static final String MODEL = "models/tinyllamas-stories-260k-f32.gguf";

  /** The first greedy tokens after BOS alone (docs/MODELS.md): "Once upon a time, there". */
  private static final List<Long> AFTER_BOS = List.of(403L, 407L, 261L, 378L, 432L, 383L);

  /**
   * Text, a second text whose first pages the first left in the cache, and BOS alone as token
   * ids; short, since every token crosses the processes twice per layer.
   */
  private static final List<String> REQUESTS =
      List.of(
          "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": \"Once upon a"
              + " time, there was a little girl\", \"max_tokens\": 12}",
          "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": \"Once upon a"
              + " time, there was a little girl named Lily. She loved\", \"max_tokens\": 12}",
          // Sampled: every rank process draws the seed's tokens (the broadcast carries them).
          "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": \"Once upon a"
              + " time\", \"max_tokens\": 12, \"temperature\": 0.8, \"top_p\": 0.95, \"seed\": 3}",
          // Last: oneRankCompletions checks its tokens against the model's known greedy ones.
          "/v1/completions {\"model\": \"tinyllamas-stories-260k\", \"prompt\": [1],"
              + " \"max_tokens\": 12}");

  @TempDir Path dir;

  private List<String> serve;
  private RankProcesses ranks;

  @BeforeEach
  void writeConfig() throws IOException {
    Path model = SharedFiles.require(MODEL);
    ranks = new RankProcesses(dir);
    Path config = dir.resolve("kvtier.properties");
    // Pages of 4 tokens, so that the second prompt hits the first's pages; a context of 128
    // tokens (32 such pages) keeps the pools small.
    Files.writeString(config, "kvtier.page-size=4\nkvtier.device-pages=40\nkvtier.host-pages=80\n");
    serve =
        List.of(
            "serve",
            "--port",
            "0",
            "--model",
            model.toString(),
            "--max-context",
            "128",
            "--config",
            config.toString());
  }

  @AfterEach
  void killLeftovers() {
    if (ranks != null) {
      ranks.close();
    }
  }

  @Test
  void twoMpiRankProcessesAnswerTheOneRankGreedyCompletions() throws Exception {
    RankProcesses.mpirun(); // skips here, before the one-rank run, without mpirun
    Map<String, Object> oneRank = oneRankCompletions();

    Path log = dir.resolve("mpi.log");
    Process job = ranks.startMpiJob(serve, log);
    RankProcesses.Serving serving = awaitServing(job, log);

    assertThat(ServedCompletions.of(serving.base(), REQUESTS)).as(output(log)).isEqualTo(oneRank);
    assertThat(ProcessHandle.of(serving.pid()).orElseThrow().destroy()).isTrue();
    assertThat(await(job, log)).as("mpirun's exit status; %s", output(log)).isZero();
  }

  @Test
  void twoHazelcastRankProcessesAnswerTheOneRankGreedyCompletions() throws Exception {
    Map<String, Object> oneRank = oneRankCompletions();

    List<Path> logs = ranks.startHazelcastRanks(serve, "kvtier-serve-gguf-test-");
    RankProcesses.Serving serving = awaitServing(ranks.process(0), logs.get(0));

    assertThat(ServedCompletions.of(serving.base(), REQUESTS))
        .as(output(logs.get(0)))
        .isEqualTo(oneRank);
    assertThat(ranks.process(0).toHandle().destroy()).isTrue();
    assertThat(await(ranks.process(0), logs.get(0))).as(output(logs.get(0))).isZero();
    assertThat(await(ranks.process(1), logs.get(1))).as(output(logs.get(1))).isZero();
  }

  /** Two MPI rank processes context parallel, in blocks of 2 positions. */
  @Test
  void twoMpiRankProcessesUnderContextParallelismAnswerTheOneRankGreedyCompletions()
      throws Exception {
    RankProcesses.mpirun(); // skips here, before the one-rank run, without mpirun
    Map<String, Object> oneRank = oneRankCompletions();

    List<String> cp = new ArrayList<>(serve);
    cp.addAll(List.of("--parallel", "cp", "--cp-interleave", "2"));
    Path log = dir.resolve("mpi-cp.log");
    Process job = ranks.startMpiJob(cp, log);
    RankProcesses.Serving serving = awaitServing(job, log);

    assertThat(ServedCompletions.of(serving.base(), REQUESTS)).as(output(log)).isEqualTo(oneRank);
    assertThat(output(log)).contains("2 ranks cp (interleave 2)");
    assertThat(ProcessHandle.of(serving.pid()).orElseThrow().destroy()).isTrue();
    assertThat(await(job, log)).as("mpirun's exit status; %s", output(log)).isZero();
  }

  /** The same with the two processes context parallel: each holds every other position's KV. */
  @Test
  void twoHazelcastRankProcessesUnderContextParallelismAnswerTheOneRankGreedyCompletions()
      throws Exception {
    Map<String, Object> oneRank = oneRankCompletions();

    List<String> cp = new ArrayList<>(serve);
    cp.addAll(List.of("--parallel", "cp"));
    List<Path> logs = ranks.startHazelcastRanks(cp, "kvtier-serve-gguf-cp-test-");
    RankProcesses.Serving serving = awaitServing(ranks.process(0), logs.get(0));

    assertThat(ServedCompletions.of(serving.base(), REQUESTS))
        .as(output(logs.get(0)))
        .isEqualTo(oneRank);
    assertThat(output(logs.get(0))).contains("2 ranks cp (interleave 1)");
    assertThat(ranks.process(0).toHandle().destroy()).isTrue();
    assertThat(await(ranks.process(0), logs.get(0))).as(output(logs.get(0))).isZero();
    assertThat(await(ranks.process(1), logs.get(1))).as(output(logs.get(1))).isZero();
  }

  /**
   * The one-rank server's completions, checked to be the model's known greedy tokens after BOS,
   * so that the comparison is with the model's real answers.
   */
  @SuppressWarnings("unchecked")
  private Map<String, Object> oneRankCompletions() throws Exception {
    Map<String, Object> oneRank =
        ServedCompletions.ofOneRank(new ArrayList<>(serve.subList(1, serve.size())), REQUESTS);
    List<Map<String, Object>> afterBos =
        (List<Map<String, Object>>) oneRank.get(REQUESTS.getLast());
    assertThat((List<Long>) afterBos.getFirst().get("token_ids"))
        .as("the one-rank server's tokens after BOS")
        .startsWith(AFTER_BOS.toArray(Long[]::new));
    return oneRank;
  }
}
