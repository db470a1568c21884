package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The request path's one array: the engine admits a request with its token array and a length
 * and finishes it with the same array and a longer length, so the cache's finish takes its fast
 * path (no second check of the prompt, no comparison with the admitted prefix), and the one copy
 * of the caller's array, {@link RankRequest}'s, keeps a caller that changes its array after
 * submitting from reaching the cache.
 */
@Timeout(60)
class RequestArrayTest {
  private static final int VOCAB = 5000;
  private static final CacheConfig CACHE = CacheConfig.of(4, 64, 128).withVocabSize(VOCAB);

  /** Chunked prefill with chunk inserts, so that a chunk insert sees the same array too. */
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS
          .withGuardCollective(false)
          .withChunkTokens(8)
          .withMaxRunning(3)
          .withCacheChunks(true);

  private static int[] prompt(int id, int length) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      // A shared 12-token prefix, then the request's own tokens.
      p[i] = i < 12 ? i : 1000 + 37 * id + i;
    }
    return p;
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void everyFinishOfTheEngineTakesTheFastPath(int ranks) throws Exception {
    List<RankRequest> requests = new ArrayList<>();
    for (int id = 1; id <= 8; id++) {
      // Output budgets 0 (the whole prompt is admitted), 1 and more (all but its last token).
      requests.add(RankRequest.of(id, prompt(id, 13 + 3 * id), id % 4));
    }
    try (RankHarness h = new RankHarness(ranks, CACHE, ENGINE)) {
      List<Object> out =
          h.onRanks(
              (rank, e) -> {
                for (long t = 0; !e.isDrained(); t++) {
                  assertThat(t).as("ticks to drain").isLessThan(500);
                  h.clocks.get(rank).set(t * RankHarness.TICK_NANOS);
                  TickCommands commands =
                      t < requests.size()
                          ? new TickCommands(
                              List.of(requests.get((int) t)), new long[0], t == requests.size() - 1)
                          : TickCommands.NONE;
                  e.tick(rank == 0 ? commands : null);
                }
                return List.of(e.stats().finished(), e.replicaDigest());
              });
      for (Object o : out) {
        assertThat(o).as("no rank failed").isInstanceOf(List.class).isEqualTo(out.getFirst());
      }
      assertThat(((List<?>) out.getFirst()).getFirst()).isEqualTo((long) requests.size());
      for (RankCache cache : h.caches) {
        assertThat(CacheTestHooks.tokenRechecks(cache))
            .as("finishes and chunk inserts given another array than the admitted one")
            .isZero();
        for (RankRequest r : requests) {
          int[] p = r.prompt();
          // Each request's prompt (its page-aligned part) is in the tree after its finish.
          assertThat(cache.cachedLength(0, p)).isEqualTo(p.length - p.length % 4);
        }
      }
    }
  }

  /**
   * A caller that changes its prompt array after building and submitting the request (here to
   * tokens outside the vocabulary and to other valid ones) changes nothing the ranks do: the
   * request finishes with the prompt it was built with, and the cache holds that prompt.
   */
  @Test
  void aCallerChangingItsArrayAfterSubmittingCannotReachTheCache() throws Exception {
    int[] callers = prompt(1, 30);
    int[] original = callers.clone();
    RankRequest request = RankRequest.of(1, callers, 3);
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE)) {
      List<Object> out =
          h.onRanks(
              (rank, e) -> {
                for (long t = 0; !e.isDrained(); t++) {
                  assertThat(t).as("ticks to drain").isLessThan(200);
                  h.clocks.get(rank).set(t * RankHarness.TICK_NANOS);
                  e.tick(
                      rank == 0
                          ? t == 0
                              ? new TickCommands(List.of(request), new long[0], true)
                              : TickCommands.NONE
                          : null);
                  if (rank == 0 && t == 0) {
                    // Submitted: the caller reuses its array, valid and invalid tokens alike.
                    for (int i = 0; i < callers.length; i++) {
                      callers[i] = i % 2 == 0 ? VOCAB + i : 7;
                    }
                  }
                }
                return List.of(e.stats().finished(), e.replicaDigest());
              });
      for (Object o : out) {
        assertThat(o).as("no rank failed").isInstanceOf(List.class).isEqualTo(out.getFirst());
      }
      assertThat(((List<?>) out.getFirst()).getFirst()).isEqualTo(1L);
      assertThat(request.prompt()).isEqualTo(original);
      for (RankCache cache : h.caches) {
        assertThat(cache.cachedLength(0, original)).isEqualTo(28);
        assertThat(CacheTestHooks.tokenRechecks(cache)).isZero();
      }
    }
  }
}
