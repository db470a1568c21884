package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.cli.report.TtftModel;
import io.kvtier.core.cache.CacheStats;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationCounter;
import io.kvtier.simulator.SimulationFailure;
import io.kvtier.simulator.SimulationResult;
import io.kvtier.simulator.SimulationTimeline;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code simulate --json}'s text, byte for byte: scripts compare it with sed and diff, and the
 * README documents its fields. The golden file was written by the hand-written writer that
 * Jackson replaced, and has gained fields since ({@code collectives.skippedTicks}; the usable hit
 * tokens and the snapshot checks of issue 22, whose fourth line is a run with snapshots); a
 * difference is a change of the documented output, not a refactoring.
 */
class SimulationJsonTest {
  private static final Path GOLDEN =
      Path.of("src/test/resources/io/kvtier/cli/simulation-json.golden");

  private static final TtftModel.Estimate TTFT =
      new TtftModel.Estimate(3, new double[] {1000, 2500.5, 1e9}, new double[] {0.4, 1, 2});

  /** A run without a mix: the mix keys say full attention, SWA pages, no snapshots. */
  private static final SimulationConfig PLAIN = SimulationConfig.builder().build();

  /** A run with SWA windows and recurrent states, 5 slots a snapshot, one every 2 pages. */
  private static final SimulationConfig WINDOWS =
      SimulationConfig.builder()
          .layerMix(io.kvtier.core.config.LayerMix.parse("full,swa:64,recurrent", "test"))
          .snapshots(5, 2)
          .windowedSwa(true)
          .build();

  @Test
  void theTextIsTheDocumentedOneByteForByte() throws IOException {
    List<String> golden = Files.readAllLines(GOLDEN, StandardCharsets.UTF_8);

    assertThat(
            List.of(
                SimulationJson.of(result(SimulationFailure.NONE, "", 12345.6789), TTFT, PLAIN),
                SimulationJson.of(
                    result(
                        SimulationFailure.RANK_FAILED,
                        "tab\there, \"quote\", back\\slash, bell\u0007, nl\n, é",
                        1.5e-7),
                    TTFT,
                    new RunWarnings(9, List.of("one", "two \u0001")),
                    false,
                    PLAIN),
                SimulationJson.of(
                    result(SimulationFailure.NONE, "", 0),
                    new TtftModel.Estimate(0, new double[0], new double[0]),
                    PLAIN),
                SimulationJson.of(hybrid(), TTFT, WINDOWS)))
        .containsExactlyElementsOf(golden);
  }

  @Test
  void aRunWithSnapshotsReportsUsableBesideMatchedAndFailsOnASnapshotMismatch() {
    @SuppressWarnings("unchecked")
    Map<String, Object> j =
        (Map<String, Object>) TestJson.parse(SimulationJson.of(hybrid(), TTFT, WINDOWS));

    assertThat(j.get("hitTokens")).isEqualTo(Map.of("device", 5L, "host", 6L, "l3", 7L));
    assertThat(j.get("usableHitTokens")).isEqualTo(Map.of("device", 4L, "host", 2L, "l3", 0L));
    assertThat(j)
        .containsEntry("usableTokens", 6L)
        .containsEntry("reusedTokens", 6L)
        .containsEntry("usableOfMatched", 0.333333)
        .containsEntry("snapshotsVerified", 9L)
        .containsEntry("snapshotMismatches", 1L)
        .containsEntry("checksPassed", false)
        .containsEntry("layerMix", "full,swa:64,recurrent")
        .containsEntry("swaCache", "windows")
        .containsEntry("snapshotSlots", 5L)
        .containsEntry("snapshotIntervalPages", 2L);
    // prompt = reused (the usable hits) + computed prompt + unreached
    assertThat((Long) j.get("promptTokens"))
        .isEqualTo(6 + 100 + (Long) j.get("unreachedPromptTokens"));
  }

  /** A run with snapshots: usable below matched, one snapshot mismatch. */
  private static SimulationResult hybrid() {
    return result(SimulationFailure.NONE, "", 1).toBuilder()
        .usableHitTokens(new SimulationResult.HitTokens(4, 2, 0))
        .set(SimulationCounter.SNAPSHOTS_VERIFIED, 9)
        .set(SimulationCounter.SNAPSHOT_MISMATCHES, 1)
        .build();
  }

  @Test
  void theTextParsesBackToTheStringsAndCountersWritten() {
    String message = "tab\there, \"quote\", back\\slash, bell\u0007, nl\n, é";
    @SuppressWarnings("unchecked")
    Map<String, Object> j =
        (Map<String, Object>)
            TestJson.parse(
                SimulationJson.of(
                    result(SimulationFailure.RANK_FAILED, message, 2.5), TTFT, PLAIN));

    assertThat(j)
        .containsEntry("failureMessage", message)
        .containsEntry("promptTokens", 9_007_199_254_740_993L)
        .containsEntry("wallSeconds", 2.5)
        .containsEntry("replicaDigest", "fedcba9876543210");
  }

  /** A result with counters that a double would round (2^53 + 1) and strings that need escapes. */
  private static SimulationResult result(
      SimulationFailure failure, String message, double wallSeconds) {
    return SimulationResult.builder()
        .workload("fixed:multiturn \"quoted\"")
        .seed(7)
        .ranks(3)
        .set(SimulationCounter.REQUESTS, 1_000_000_000_000L)
        .set(SimulationCounter.FINISHED, 11)
        .set(SimulationCounter.ABORTED, 2)
        .set(SimulationCounter.REJECTED, 1)
        .set(SimulationCounter.LOAD_FAILURE_ABORTS, 0)
        .set(SimulationCounter.TICKS, 3)
        .set(SimulationCounter.PROMPT_TOKENS, 9_007_199_254_740_993L)
        .set(SimulationCounter.COMPUTED_TOKENS, 123)
        .set(SimulationCounter.KV_VERIFIED_PAGES, 42)
        .set(SimulationCounter.PREFILL_TOKENS, 100)
        .set(SimulationCounter.UNREAD_REQUESTS, 4)
        .hitTokens(new SimulationResult.HitTokens(5, 6, 7))
        .collectives(new SimulationResult.CollectiveCounts(2, 1, 3, 4, 0, 2, 1))
        .cache(CacheStats.of(counter -> counter.ordinal() + 1))
        .failure(failure, failure == SimulationFailure.NONE ? -1 : 2, message)
        .wallSeconds(wallSeconds)
        .timeline(new SimulationTimeline(1, List.of(), 1, List.of()))
        .replicaDigest(0xfedcba9876543210L)
        .build();
  }
}
