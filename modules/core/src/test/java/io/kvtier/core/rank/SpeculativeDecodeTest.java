package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Speculative decoding ({@link ModelRunner#speculativeTokens}): whatever the draft proposes, the
 * engine's output is the model's own greedy output token for token, on every rank alike, and the
 * proposals the target rejected are counted as such.
 */
@Timeout(60)
class SpeculativeDecodeTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 64, 128);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8).withMaxRunning(4);

  /**
   * The {@link DecodeBatchTest.TokenModel} with a draft that guesses the model's token except at
   * positions where {@code wrongEvery} divides a hash of the prefix: a draft right most of the
   * time, wrong sometimes, so both the kept run and the rollback happen.
   */
  static final class DraftedModel extends DecodeBatchTest.TokenModel {
    final int k;
    final int wrongEvery;

    /** The highest position a verification wrote, per step: positions past the kept run. */
    final List<int[]> verifications = new ArrayList<>();

    DraftedModel(int k, int wrongEvery) {
      this.k = k;
      this.wrongEvery = wrongEvery;
    }

    @Override
    public int speculativeTokens() {
      return k;
    }

    @Override
    public void propose(ModelStep step, int count, int[] proposals) {
      assertThat(step.to()).isEqualTo(step.from() + 1);
      int[] tokens = java.util.Arrays.copyOf(step.tokens(), step.to() + count);
      for (int i = 0; i < count; i++) {
        int end = step.to() + i;
        int right = next(tokens, end);
        int guess =
            wrongEvery > 0 && Math.floorMod(right * 7 + end, wrongEvery) == 0 ? right + 1 : right;
        tokens[end] = guess;
        proposals[i] = guess;
      }
    }

    @Override
    public void verifyTokens(ModelStep step, int[] tokens) {
      verifications.add(new int[] {step.from(), step.to()});
      for (int p = step.from(); p < step.to(); p++) {
        tokens[p - step.from()] = next(step.tokens(), p + 1);
      }
    }

    private int next(int[] tokens, int length) {
      return nextToken(new ModelStep(0, 0, tokens, 0, length, new int[0]));
    }
  }

  private static RankRequest request(long id, int length, int output) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 ? 5 + i : 50 + 7 * (int) id + i;
    }
    return RankRequest.of(id, p, output);
  }

  private static TickCommands commands(long tick) {
    return switch ((int) tick) {
      case 0 ->
          TickCommands.arrive(
              List.of(request(1, 12, 9), request(2, 20, 6), request(3, 9, 12), request(4, 16, 3)));
      case 5 -> TickCommands.arrive(List.of(request(5, 24, 8), request(6, 12, 1)));
      case 6 -> TickCommands.END;
      default -> TickCommands.NONE;
    };
  }

  /** Each rank's tokens per request, and each rank's speculation counts. */
  private record Run(List<Map<Long, List<Integer>>> tokens, List<SpeculationStats> stats) {}

  private static Run run(java.util.function.IntFunction<DecodeBatchTest.TokenModel> m)
      throws Exception {
    List<DecodeBatchTest.TokenModel> models = new ArrayList<>(List.of(m.apply(0), m.apply(1)));
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE, models::get, Duration.ofSeconds(20))) {
      List<Map<Long, List<Integer>>> tokens =
          h.tokensUntilDrained(SpeculativeDecodeTest::commands, 300, (rank, tick) -> {});
      List<SpeculationStats> stats = new ArrayList<>();
      for (RankEngine e : h.engines) {
        stats.add(e.speculation());
      }
      return new Run(tokens, stats);
    }
  }

  @Test
  void speculationGivesTheModelsOwnTokensWithRejectionsRolledBack() throws Exception {
    Run plain = run(r -> new DecodeBatchTest.TokenModel());
    Run exact = run(r -> new DraftedModel(3, 0));
    Run wrong = run(r -> new DraftedModel(4, 3));

    assertThat(plain.tokens().get(0)).hasSize(6);
    assertThat(plain.tokens().get(0).get(3L)).hasSize(12);
    for (Run run : List.of(exact, wrong)) {
      assertThat(run.tokens().get(0)).isEqualTo(plain.tokens().get(0));
      assertThat(run.tokens().get(1)).isEqualTo(run.tokens().get(0));
      assertThat(run.stats().get(1)).isEqualTo(run.stats().get(0));
    }
    assertThat(plain.stats().get(0).totalProposed()).isZero();
    SpeculationStats all = exact.stats().get(0);
    assertThat(all.totalProposed()).isPositive();
    assertThat(all.acceptanceRate()).as("a draft that is always right").isEqualTo(1.0);
    SpeculationStats some = wrong.stats().get(0);
    assertThat(some.totalAccepted()).isPositive().isLessThan(some.totalProposed());
    assertThat(
            some.meanAcceptedLength(SpeculationStats.Tier.NONE)
                + some.meanAcceptedLength(SpeculationStats.Tier.DEVICE))
        .isPositive();
  }

  @Test
  void aStepProposesNoMoreThanTheOutputBudgetLeaves() throws Exception {
    DraftedModel[] models = new DraftedModel[2];
    run(r -> models[r] = new DraftedModel(8, 0));
    for (int[] v : models[0].verifications) {
      assertThat(v[1] - v[0]).isBetween(2, 9);
    }
    // Request 4 (16 + 3 tokens): one step of 1 proposal (its budget), after its first token; its
    // last
    // verified position is its KV target's last (16 + 3 - 1 - 1).
    assertThat(models[0].verifications).anyMatch(v -> v[0] == 16 && v[1] == 18);
    assertThat(models[0].verifications).noneMatch(v -> v[1] > 24 + 8 - 1);
  }

  @Test
  void aNegativeDraftLengthIsRefused() {
    DecodeBatchTest.TokenModel bad = new DraftedModel(-1, 0);
    assertThatThrownBy(
            () ->
                new Scheduler(
                    io.kvtier.core.cache.RankCache.withoutMemory(CacheConfig.of(4, 64, 0)),
                    bad,
                    ENGINE,
                    new EngineCounters(),
                    null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-1 speculative tokens");
  }
}
