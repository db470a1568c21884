package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client's bad request is a rejected request, never a dead group: a token outside the
 * vocabulary, output budgets up to {@code Integer.MAX_VALUE}, sampling from a model that
 * decodes greedily only, log-probabilities from a model that reports none and held-back tokens
 * outside the vocabulary (or all of it) are rejected with their reason
 * on every rank alike, and the other requests of the same ticks finish.
 */
@Timeout(60)
class RequestEntryCheckTest {
  private static final int VOCAB = 5000;
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64).withVocabSize(VOCAB);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8).withMaxRunning(2);

  private static int[] prompt(int id, int length) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 ? i : 1000 + 37 * id + i;
    }
    return p;
  }

  private static final List<RankRequest> GOOD =
      List.of(
          RankRequest.of(1, prompt(1, 14), 2),
          RankRequest.of(2, prompt(2, 14), 2),
          RankRequest.of(7, prompt(7, 10), 0));

  private static final List<RankRequest> BAD;

  static {
    int[] outside = prompt(3, 14);
    outside[11] = VOCAB;
    BAD =
        List.of(
            RankRequest.of(3, outside, 2),
            RankRequest.of(4, prompt(4, 14), Integer.MAX_VALUE),
            RankRequest.of(5, prompt(5, 14), Integer.MAX_VALUE - 14),
            // Fits no overflow, but not the 32-page device pool either: rejected in step 3.
            RankRequest.of(6, prompt(6, 14), 1000),
            // Asks to sample from a model that decodes greedily only.
            new RankRequest(
                8, 0, 0, 2, prompt(8, 14), TransferRole.NONE, 0, new Sampling(0.7f, 1, 0, 5)),
            // Asks a model that reports none for log-probabilities.
            new RankRequest(
                9, 0, 0, 2, prompt(9, 14), TransferRole.NONE, 0, Sampling.GREEDY.withLogprobs(3)),
            // Asks a model that decodes greedily only for penalties.
            new RankRequest(
                10,
                0,
                0,
                2,
                prompt(10, 14),
                TransferRole.NONE,
                0,
                Sampling.GREEDY.withPenalties(new Penalties(0, 1, 1))),
            // A logit bias on a token outside the vocabulary.
            new RankRequest(
                11,
                0,
                0,
                2,
                prompt(11, 14),
                TransferRole.NONE,
                0,
                Sampling.GREEDY.withLogitBias(LogitBias.of(java.util.Map.of(VOCAB, 5f)))),
            // A logit bias of a model that decodes greedily only.
            new RankRequest(
                12,
                0,
                0,
                2,
                prompt(12, 14),
                TransferRole.NONE,
                0,
                Sampling.GREEDY.withLogitBias(LogitBias.of(java.util.Map.of(7, 5f)))),
            // Holds back a token outside the vocabulary.
            new RankRequest(
                13,
                0,
                0,
                2,
                prompt(13, 14),
                TransferRole.NONE,
                0,
                Sampling.GREEDY.withMinTokens(MinTokens.of(1, List.of(2, VOCAB)))),
            // Holds tokens back on a model that decodes greedily only.
            new RankRequest(
                14,
                0,
                0,
                2,
                prompt(14, 14),
                TransferRole.NONE,
                0,
                Sampling.GREEDY.withMinTokens(MinTokens.of(1, List.of(2)))));
  }

  private static TickCommands commands(long tick) {
    return switch ((int) tick) {
      case 0 -> TickCommands.arrive(List.of(GOOD.get(0), BAD.get(0), BAD.get(1), BAD.get(4)));
      case 1 ->
          TickCommands.arrive(
              List.of(
                  BAD.get(2),
                  GOOD.get(1),
                  BAD.get(3),
                  BAD.get(5),
                  BAD.get(6),
                  BAD.get(7),
                  BAD.get(8),
                  BAD.get(9),
                  BAD.get(10)));
      case 2 -> new TickCommands(List.of(GOOD.get(2)), new long[0], true);
      default -> TickCommands.NONE;
    };
  }

  /** Each request's ending and, for a rejection, its reason. */
  static final class Endings implements RequestListener {
    final Map<Long, String> ended = new TreeMap<>();
    final Map<Long, String> reasons = new TreeMap<>();

    @Override
    public void rejected(long tick, long id, String reason) {
      reasons.put(id, reason);
    }

    @Override
    public void ended(long tick, long id, RequestOutcome outcome) {
      ended.put(id, outcome + "@" + tick);
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void badRequestsAreRejectedWithTheirReasonOnEveryRankAndTheRestFinish(int ranks)
      throws Exception {
    try (RankHarness h = new RankHarness(ranks, CACHE, ENGINE)) {
      List<Object> out =
          h.onRanks(
              (rank, e) -> {
                Endings endings = new Endings();
                e.setRequestListener(endings);
                for (long t = 0; !e.isDrained(); t++) {
                  assertThat(t).as("ticks to drain").isLessThan(200);
                  h.clocks.get(rank).set(t * RankHarness.TICK_NANOS);
                  e.tick(rank == 0 ? commands(t) : null);
                }
                return List.of(
                    endings.ended,
                    endings.reasons,
                    e.stats().finished(),
                    e.stats().rejected(),
                    e.replicaDigest());
              });
      for (Object o : out) {
        assertThat(o).as("no rank failed").isInstanceOf(List.class);
        assertThat(o).isEqualTo(out.getFirst());
      }
      @SuppressWarnings("unchecked")
      List<Object> first = (List<Object>) out.getFirst();
      @SuppressWarnings("unchecked")
      Map<Long, String> ended = (Map<Long, String>) first.get(0);
      @SuppressWarnings("unchecked")
      Map<Long, String> reasons = (Map<Long, String>) first.get(1);
      assertThat(ended)
          .containsEntry(3L, "REJECTED@0")
          .containsEntry(4L, "REJECTED@0")
          .containsEntry(8L, "REJECTED@0")
          .containsEntry(5L, "REJECTED@1")
          .containsEntry(9L, "REJECTED@1")
          .containsEntry(10L, "REJECTED@1")
          .containsEntry(11L, "REJECTED@1")
          .containsEntry(12L, "REJECTED@1")
          .containsEntry(13L, "REJECTED@1")
          .containsEntry(14L, "REJECTED@1");
      // Step 3 rejects it when it reaches the head of the queue.
      assertThat(ended.get(6L)).startsWith("REJECTED@");
      assertThat(ended.get(1L)).startsWith("FINISHED");
      assertThat(ended.get(2L)).startsWith("FINISHED");
      assertThat(ended.get(7L)).startsWith("FINISHED");
      assertThat(reasons.keySet()).containsExactly(3L, 4L, 5L, 6L, 8L, 9L, 10L, 11L, 12L, 13L, 14L);
      assertThat(reasons.get(13L))
          .contains("it holds back token 5000, outside the vocabulary [0, 5000)");
      assertThat(reasons.get(14L))
          .contains("it holds tokens back (MinTokens{1 before [2]})")
          .contains("the model decodes greedily only")
          .contains("leave min_tokens out");
      assertThat(reasons.get(12L))
          .contains("it asks for a logit bias (LogitBias{7=5.0})")
          .contains("the model decodes greedily only");
      assertThat(reasons.get(11L))
          .contains("its logit bias names token 5000, outside the vocabulary [0, 5000)");
      assertThat(reasons.get(10L))
          .contains("it asks for penalties (Penalties[presence=0.0, frequency=1.0")
          .contains("the model decodes greedily only");
      assertThat(reasons.get(9L))
          .contains("it asks for log-probabilities (logprobs=3)")
          .contains("the model does not report them");
      assertThat(reasons.get(8L))
          .contains("it samples (Sampling[temperature=0.7")
          .contains("but the model decodes greedily only: send temperature 0");
      assertThat(reasons.get(3L)).contains("prompt[11]=5000 is outside the vocabulary [0, 5000)");
      assertThat(reasons.get(4L))
          .contains("maxOutputTokens (2147483647)")
          .contains("more than the 2147483639");
      assertThat(reasons.get(5L)).contains("maxOutputTokens (2147483633)");
      assertThat(reasons.get(6L)).contains("needs 254 pages").contains("device pool has 32");
      assertThat(first.get(2)).isEqualTo(3L);
      assertThat(first.get(3)).isEqualTo(11L);
    }
  }

  /**
   * A second arrival of a live request's id (in a later tick, and twice in one tick) is rejected
   * with its reason on every rank, and the live request of that id finishes: a client's reused id
   * does not fail the group.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aDuplicateLiveIdIsRejectedAndTheGroupGoesOn(int ranks) throws Exception {
    RankRequest first = RankRequest.of(1, prompt(1, 14), 8);
    RankRequest again = RankRequest.of(1, prompt(9, 10), 2);
    try (RankHarness h = new RankHarness(ranks, CACHE, ENGINE)) {
      List<Object> out =
          h.onRanks(
              (rank, e) -> {
                List<String> events = new ArrayList<>();
                e.setRequestListener(
                    new RequestListener() {
                      @Override
                      public void rejected(long tick, long id, String reason) {
                        events.add("rejected " + id + "@" + tick + ": " + reason);
                      }

                      @Override
                      public void ended(long tick, long id, RequestOutcome outcome) {
                        events.add("ended " + id + " " + outcome + "@" + tick);
                      }
                    });
                for (long t = 0; !e.isDrained(); t++) {
                  assertThat(t).as("ticks to drain").isLessThan(200);
                  h.clocks.get(rank).set(t * RankHarness.TICK_NANOS);
                  TickCommands c =
                      switch ((int) t) {
                        case 0 -> TickCommands.arrive(List.of(first, GOOD.get(1)));
                        case 1 -> TickCommands.arrive(List.of(again, GOOD.get(2), GOOD.get(2)));
                        case 2 -> TickCommands.END;
                        default -> TickCommands.NONE;
                      };
                  e.tick(rank == 0 ? c : null);
                }
                return List.of(
                    events, e.stats().finished(), e.stats().rejected(), e.replicaDigest());
              });
      for (Object o : out) {
        assertThat(o).as("no rank failed").isInstanceOf(List.class);
        assertThat(o).isEqualTo(out.getFirst());
      }
      @SuppressWarnings("unchecked")
      List<String> events = (List<String>) ((List<Object>) out.getFirst()).get(0);
      assertThat(events)
          .contains(
              "rejected 1@1: a request with id=1 is still waiting or running: give every live"
                  + " request its own id",
              "ended 1 REJECTED@1",
              "rejected 7@1: a request with id=7 is still waiting or running: give every live"
                  + " request its own id",
              "ended 7 REJECTED@1");
      assertThat(events.stream().filter(s -> s.startsWith("ended 1 FINISHED"))).hasSize(1);
      assertThat(events.stream().filter(s -> s.startsWith("ended 7 FINISHED"))).hasSize(1);
      assertThat(events.stream().filter(s -> s.startsWith("ended 2 FINISHED"))).hasSize(1);
      assertThat(((List<?>) out.getFirst()).get(1)).isEqualTo(3L);
      assertThat(((List<?>) out.getFirst()).get(2)).isEqualTo(2L);
    }
  }

  @Test
  void checkRequestAnswersTheSubmitterBeforeAnythingIsSent() throws Exception {
    try (RankHarness h = new RankHarness(1, CACHE, ENGINE)) {
      RankEngine e = h.engines.getFirst();
      for (RankRequest good : GOOD) {
        e.checkRequest(good);
      }
      List<String> messages = new ArrayList<>();
      for (RankRequest bad : BAD) {
        assertThatThrownBy(() -> e.checkRequest(bad))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("request id=" + bad.id() + " would be rejected: ")
            .satisfies(t -> messages.add(t.getMessage()));
      }
      assertThat(messages).hasSize(11);
    }
  }

  /** Holding back every token of the vocabulary would leave nothing to choose: refused. */
  @Test
  void holdingBackEveryTokenIsRefused() throws Exception {
    int vocab = 16;
    try (RankHarness h =
        new RankHarness(1, CacheConfig.of(4, 32, 64).withVocabSize(vocab), ENGINE)) {
      RankEngine e = h.engines.getFirst();
      int[] all = java.util.stream.IntStream.range(0, vocab).toArray();
      assertThatThrownBy(() -> e.checkRequest(holding(new MinTokens(2, all))))
          .hasMessageContaining("it holds back every token of the vocabulary");
      int[] allButOne = java.util.Arrays.copyOf(all, vocab - 1);
      assertThatThrownBy(() -> e.checkRequest(holding(new MinTokens(2, allButOne))))
          .as("one token left: refused only because this model decodes greedily only")
          .hasMessageNotContaining("every token")
          .hasMessageContaining("the model decodes greedily only");
    }
  }

  private static RankRequest holding(MinTokens held) {
    return new RankRequest(
        1, 0, 0, 2, new int[] {1, 2, 3}, TransferRole.NONE, 0, Sampling.GREEDY.withMinTokens(held));
  }
}
