package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import java.time.Duration;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The simulator with recurrent-state snapshots (HYBRID.md §5, §8): the cache takes a snapshot
 * slot every K pages and at each request's last full page, the pattern model writes a state
 * derived from the prefix into every snapshot slot and checks the state of every resume, and the
 * result reports the usable part of the match beside the matched one. Every run must pass every
 * check (digests, leaks, KV, snapshot states) with usable hits above 0 and at most the matched
 * ones in every tier, on 1 and 4 ranks, under write-through and write-back, with an L3 store.
 */
@Timeout(180)
class HybridSimulationTest {

  @BeforeAll
  static void quietLogs() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
    Logger.getLogger("io.kvtier.backend.sim").setLevel(Level.OFF);
  }

  /**
   * Multi-turn chats that revisit conversations over a device pool that cannot hold them all, a
   * host tier and an L3 store: matches on every tier, evictions, load-backs.
   */
  private static SimulationConfig config(int ranks, WritePolicy write, int interval) {
    return SimulationConfig.builder()
        .seed(22)
        .ranks(ranks)
        .workload("multiturn:conversations=16,turns=4,first=48,answer=8,question=12")
        .pageSize(4)
        .devicePages(64)
        .hostRatio(2)
        .writePolicy(write)
        .chunkTokens(16)
        .maxRunning(4)
        .ticks(400)
        .abortProbability(0.01)
        .l3(
            L3Simulation.NONE
                .withStore("memory")
                .withPrefetch(L3PrefetchPolicy.TIMEOUT, 8)
                .withTiming(400, 0.5, Duration.ofMillis(6), 0))
        .layerMix(LayerMix.parse("full,recurrent", "test"))
        .snapshots(1, interval)
        .build();
  }

  private static void assertHealthy(SimulationResult r) {
    assertThat(r.passed()).as("%s", r).isTrue();
    assertThat(r.replicaDigestsEqual()).isTrue();
    assertThat(r.leakedPages()).isZero();
    assertThat(r.kvMismatches()).isZero();
    assertThat(r.snapshotMismatches()).isZero();
    assertThat(r.snapshotsVerified()).as("resumes from a snapshot").isPositive();
    assertThat(r.usableHitTokens().total()).as("usable hit tokens").isPositive();
    assertThat(r.usableHitTokens().within(r.hitTokens()))
        .as("usable %s within matched %s", r.usableHitTokens(), r.hitTokens())
        .isTrue();
    // prompt = reused (usable) + computed prompt + never reached
    assertThat(r.unreachedPromptTokens()).isNotNegative();
  }

  @ParameterizedTest(name = "{0} ranks, {1}")
  @CsvSource({"1, WRITE_THROUGH", "4, WRITE_THROUGH", "1, WRITE_BACK", "4, WRITE_BACK"})
  void everyCheckPassesAndUsableHitsAreWithinTheMatchedOnes(int ranks, WritePolicy write) {
    SimulationResult r = MultiRankSimulator.run(config(ranks, write, 2));

    assertHealthy(r);
    assertThat(r.hitTokens().host() + r.hitTokens().l3()).as("hits below the device").isPositive();
  }

  @Test
  void everyRankChecksEveryResume() {
    SimulationResult four = MultiRankSimulator.run(config(4, WritePolicy.WRITE_THROUGH, 1));

    assertHealthy(four);
    // Resumes are replicated decisions, and each rank checks its own shard's state: the count
    // summed over ranks is four times the resumes.
    assertThat(four.snapshotsVerified() % 4).isZero();
  }

  @Test
  void withoutSnapshotsUsableIsMatchedAndNothingIsChecked() {
    SimulationConfig c =
        config(2, WritePolicy.WRITE_THROUGH, 2).toBuilder()
            .layerMix(LayerMix.full(2))
            .snapshots(0, 8)
            .build();
    SimulationResult r = MultiRankSimulator.run(c);

    assertThat(r.passed()).as("%s", r).isTrue();
    assertThat(r.usableHitTokens()).isEqualTo(r.hitTokens());
    assertThat(r.snapshotsVerified()).isZero();
  }

  /**
   * The field's failure: a resume that reads another request's state. The engine's steps reach
   * the model with each resume slot swapped for the slot of the last snapshot any other request
   * took; the model's check must count the wrong states and the run must fail. Without the check
   * the run passes with the same digests (the cache's decisions do not read the bytes).
   */
  @Test
  void aResumeFromAnotherRequestsSnapshotFailsTheRun() {
    SimulationConfig c = config(2, WritePolicy.WRITE_THROUGH, 2);
    SimulationResult r = new MultiRankSimulator(c, SwappedResume::new).run();

    assertThat(r.snapshotMismatches()).isPositive();
    assertThat(r.passed()).isFalse();
    assertThat(r.failure()).isEqualTo(SimulationFailure.NONE);
    assertThat(r.replicaDigestsEqual()).isTrue();
  }

  /** Hands each resume the slots of the latest snapshot another request took. */
  private static final class SwappedResume implements ModelRunner {
    private final ModelRunner model;
    private long lastId = -1;
    private int[] lastSlots;

    SwappedResume(ModelRunner model) {
      this.model = model;
    }

    @Override
    public int layers() {
      return model.layers();
    }

    @Override
    public int snapshotSlots() {
      return model.snapshotSlots();
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      ModelStep s = step;
      if (step.resumeSlots().length > 0 && lastSlots != null && lastId != step.requestId()) {
        s =
            new ModelStep(
                step.requestId(),
                step.namespace(),
                step.tokens(),
                step.from(),
                step.to(),
                step.pageTable(),
                lastSlots,
                step.snapshots());
      }
      model.writeLayer(s, layer);
      if (layer == layers() - 1 && !step.snapshots().isEmpty()) {
        lastId = step.requestId();
        lastSlots = step.snapshots().get(step.snapshots().size() - 1).slots().clone();
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      return model.nextToken(step);
    }

    @Override
    public int verifyPrefix(ModelStep step) {
      return model.verifyPrefix(step);
    }

    @Override
    public void released(long requestId) {
      model.released(requestId);
    }
  }
}
