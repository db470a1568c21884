package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RankEngineConfig#maxPrefillTokens()}: the running requests together prefill at most the
 * budget in a tick, taking it in admission order, each at most its chunk; decode steps go on
 * beside a spent budget; a prepared backup's one-step prefill is never split; and the answers are
 * those of the run without a budget, on every rank alike.
 */
@Timeout(60)
class PrefillBudgetTest {
  private static final int CHUNK = 8;
  private static final CacheConfig CACHE = CacheConfig.of(4, 64, 128);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS
          .withGuardCollective(false)
          .withChunkTokens(CHUNK)
          .withMaxRunning(4)
          .withDigestInterval(1);

  /** One forward step as the model saw it. */
  record Step(long tick, long id, int from, int to) {}

  /**
   * {@link DecodeBatchTest.TokenModel} (next token: a function of every token so far) that also
   * records every step with its tick, and the steps that streamed a prepared backup (the
   * scheduler asks {@link #streamedBlock} only then).
   */
  static final class RecordingModel extends DecodeBatchTest.TokenModel {
    final List<Step> ticked = new ArrayList<>();
    final List<Step> streamed = new ArrayList<>();
    long tick;

    /** The harness's KV layout has two layers, whose blocks a prepared backup streams. */
    @Override
    public int layers() {
      return 2;
    }

    @Override
    public int streamedBlock(int layer) {
      if (layer == 0) {
        streamed.add(ticked.getLast());
      }
      return layer;
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      super.writeLayer(step, layer);
      if (layer == 0) {
        ticked.add(new Step(tick, step.requestId(), step.from(), step.to()));
      }
    }
  }

  private static int promptLength(long id) {
    return switch ((int) id) {
      case 1, 6 -> 12;
      case 2 -> 20;
      case 3 -> 9;
      case 4 -> 16;
      case 5 -> 24;
      case 10 -> 20;
      case 11 -> 8;
      default -> 6;
    };
  }

  /**
   * Requests below 10 share their first 8 tokens, so later ones hit and back up what is new;
   * from 10 on each prompt is its own.
   */
  private static RankRequest request(long id, int output) {
    int length = promptLength(id);
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 && id < 10 ? 5 + i : 50 + 7 * (int) id + i;
    }
    return RankRequest.of(id, p, output);
  }

  /** A long prompt, then in the same tick a short one whose whole prompt a backup prepares. */
  private static TickCommands preparedBehindLong(long tick) {
    return switch ((int) tick) {
      case 0 -> TickCommands.arrive(List.of(request(10, 3), request(11, 3)));
      case 1 -> TickCommands.END;
      default -> TickCommands.NONE;
    };
  }

  private static TickCommands commands(long tick) {
    return switch ((int) tick) {
      case 0 ->
          TickCommands.arrive(List.of(request(1, 9), request(2, 6), request(3, 12), request(4, 3)));
      case 5 -> TickCommands.arrive(List.of(request(5, 8), request(6, 1), request(7, 4)));
      case 9 -> TickCommands.END;
      default -> TickCommands.NONE;
    };
  }

  /** A run's answers (rank 0's and rank 1's), rank 0's steps and its prepared ones. */
  record Run(List<Map<Long, List<Integer>>> tokens, List<Step> steps, List<Step> streamed) {}

  @SuppressWarnings("unchecked")
  private static Run run(RankEngineConfig engine) throws Exception {
    return run(engine, PrefillBudgetTest::commands);
  }

  private static Run run(RankEngineConfig engine, RankHarness.TickFeed feed) throws Exception {
    List<RecordingModel> models = List.of(new RecordingModel(), new RecordingModel());
    try (RankHarness h = new RankHarness(2, CACHE, engine, models::get, Duration.ofSeconds(20))) {
      List<Map<Long, List<Integer>>> tokens =
          h.tokensUntilDrained(feed, 300, (rank, tick) -> models.get(rank).tick = tick);
      assertThat(models.get(1).ticked).as("rank 1's steps").isEqualTo(models.get(0).ticked);
      return new Run(tokens, models.get(0).ticked, models.get(0).streamed);
    }
  }

  /** Prompt tokens prefilled in each tick that prefilled any. */
  private static Map<Long, Integer> prefillPerTick(List<Step> steps) {
    Map<Long, Integer> perTick = new TreeMap<>();
    for (Step s : steps) {
      if (s.from() < promptLength(s.id())) {
        assertThat(s.to())
            .as("a prefill step ends in the prompt")
            .isLessThanOrEqualTo(promptLength(s.id()));
        perTick.merge(s.tick(), s.to() - s.from(), Integer::sum);
      }
    }
    return perTick;
  }

  @Test
  void theTicksPrefillAtMostTheBudgetInAdmissionOrderAndAnswerAsWithout() throws Exception {
    Run unbounded = run(ENGINE);
    Run budget = run(ENGINE.withMaxPrefillTokens(10));

    assertThat(prefillPerTick(unbounded.steps()).values())
        .as(
            "without a budget some tick prefills more than 10 tokens (so the bound is the budget's)")
        .anyMatch(n -> n > 10);
    Map<Long, Integer> perTick = prefillPerTick(budget.steps());
    assertThat(perTick.values()).allMatch(n -> n <= 10).contains(10);

    // In admission order: within a tick only the last prefill step may be cut short by the
    // budget (less than both its chunk and what is left of its prompt).
    Map<Long, List<Step>> byTick = new TreeMap<>();
    for (Step s : budget.steps()) {
      if (s.from() < promptLength(s.id())) {
        byTick.computeIfAbsent(s.tick(), k -> new ArrayList<>()).add(s);
      }
    }
    for (List<Step> tick : byTick.values()) {
      for (int i = 0; i < tick.size() - 1; i++) {
        Step s = tick.get(i);
        assertThat(s.to() - s.from())
            .as("step %s before the tick's last prefill step", s)
            .isEqualTo(Math.min(CHUNK, promptLength(s.id()) - s.from()));
      }
    }
    // Decode steps are not counted: some tick that spent the whole budget also decoded.
    assertThat(budget.steps())
        .as("a decode step in a tick whose budget the prefills spent")
        .anyMatch(s -> s.from() >= promptLength(s.id()) && perTick.getOrDefault(s.tick(), 0) == 10);

    assertThat(budget.tokens().get(0)).hasSize(7).isEqualTo(unbounded.tokens().get(0));
    assertThat(budget.tokens().get(1)).isEqualTo(budget.tokens().get(0));
  }

  @Test
  void aBudgetBelowTheChunkKeepsTheAnswers() throws Exception {
    Run unbounded = run(ENGINE);
    Run budget = run(ENGINE.withMaxPrefillTokens(5));

    assertThat(prefillPerTick(budget.steps()).values()).allMatch(n -> n >= 1 && n <= 5);
    assertThat(budget.tokens().get(0)).isEqualTo(unbounded.tokens().get(0));
    assertThat(budget.tokens().get(1)).isEqualTo(budget.tokens().get(0));
  }

  @Test
  void aPreparedPrefillWaitsToRunWholeRatherThanSplit() throws Exception {
    Run unbounded = run(ENGINE, PrefillBudgetTest::preparedBehindLong);
    Run budget = run(ENGINE.withMaxPrefillTokens(10), PrefillBudgetTest::preparedBehindLong);

    // Without a budget both prefill at once, the short one prepared (streamed) in one step.
    assertThat(unbounded.streamed()).containsExactly(new Step(0, 11, 0, 8));
    // With 10 tokens a tick, the long prompt takes 8, 8 and 4; the short one's 8 would be split
    // by what is left, so it waits until it comes first, and runs whole, still prepared.
    assertThat(budget.steps())
        .filteredOn(s -> s.from() < promptLength(s.id()))
        .containsExactly(
            new Step(0, 10, 0, 8),
            new Step(1, 10, 8, 16),
            new Step(2, 10, 16, 20),
            new Step(3, 11, 0, 8));
    assertThat(budget.streamed()).containsExactly(new Step(3, 11, 0, 8));
    assertThat(budget.tokens().get(0)).isEqualTo(unbounded.tokens().get(0));
    assertThat(budget.tokens().get(1)).isEqualTo(budget.tokens().get(0));
  }

  @Test
  void aBudgetBelowOneIsRefusedNamingIt() {
    assertThatThrownBy(() -> ENGINE.withMaxPrefillTokens(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxPrefillTokens=0 must be >= 1");
    assertThat(RankEngineConfig.DEFAULTS.maxPrefillTokens())
        .isEqualTo(RankEngineConfig.NO_PREFILL_BUDGET);
  }
}
