package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Requests that arrive in one tick and share a prompt prefix: each prefill step inserts its pages
 * ({@link RankEngineConfig#cacheChunks()}), so a waiting request that shares at least {@link
 * Scheduler#SHARED_PREFILL_MIN_TOKENS} tokens with a running request's uncomputed prompt waits
 * for that one's step and then matches them, instead of computing them beside it; a request in
 * another namespace (another tenant) never waits for, nor matches, another's prompt.
 */
@Timeout(60)
class SharedPrefillTest {
  private static final int PAGE = 4;
  private static final CacheConfig CACHE = CacheConfig.of(PAGE, 128, 256).withVocabSize(5000);

  /** A 40-token prefix that every request starts with, then its own 6 tokens. */
  private static int[] prompt(int id) {
    int[] p = new int[46];
    for (int i = 0; i < p.length; i++) {
      p[i] = i < 40 ? 7 + i : 1000 + 37 * id + i;
    }
    return p;
  }

  /** Records each request's admission tick and the prompt tokens it resumed from. */
  private static final class Admissions implements RequestListener {
    final Map<Long, long[]> byId = new ConcurrentHashMap<>();

    @Override
    public void admitted(long tick, long id, int device, int host, int l3, int usableTokens) {
      byId.put(id, new long[] {tick, usableTokens});
    }
  }

  private static Map<Long, long[]> run(int ranks, RankEngineConfig engine, List<RankRequest> burst)
      throws Exception {
    try (RankHarness h = new RankHarness(ranks, CACHE, engine)) {
      List<Admissions> recorders = new ArrayList<>();
      for (RankEngine e : h.engines) {
        Admissions a = new Admissions();
        e.setRequestListener(a);
        recorders.add(a);
      }
      List<Object> digests =
          h.digestsUntilDrained(
              t -> t == 0 ? new TickCommands(burst, new long[0], true) : TickCommands.NONE, 200);
      for (Object d : digests) {
        assertThat(d).as("no rank failed, replicas equal").isEqualTo(digests.getFirst());
      }
      for (Admissions a : recorders) {
        assertThat(a.byId).hasSameSizeAs(burst);
      }
      return recorders.getFirst().byId;
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aBurstComputesItsSharedPrefixOnceAndTenantsStayApart(int ranks) throws Exception {
    List<RankRequest> burst =
        List.of(
            new RankRequest(1, 0, 0, 3, prompt(1)),
            new RankRequest(2, 0, 0, 3, prompt(2)),
            new RankRequest(3, 0, 0, 3, prompt(3)),
            // Another tenant's namespace: same tokens, nothing shared.
            new RankRequest(4, 9, 0, 3, prompt(4)));
    RankEngineConfig engine =
        RankEngineConfig.DEFAULTS.withGuardCollective(false).withMaxRunning(8);

    Map<Long, long[]> shared = run(ranks, engine, burst);
    assertThat(shared.get(1L)).containsExactly(0, 0);
    // 2 waits for 1's one-step prefill, then resumes from its 40 shared tokens (10 pages); 3 and
    // 4 queue behind it in arrival order.
    assertThat(shared.get(2L)).containsExactly(1, 40);
    assertThat(shared.get(3L)).containsExactly(1, 40);
    assertThat(shared.get(4L)).as("another namespace").containsExactly(1, 0);

    Map<Long, long[]> atFinish = run(ranks, engine.withCacheChunks(false), burst);
    for (long id = 1; id <= 4; id++) {
      assertThat(atFinish.get(id))
          .as("request %d, pages inserted at finish", id)
          .containsExactly(0, 0);
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aTenantWithAnotherNamespaceIsNotHeldBack(int ranks) throws Exception {
    List<RankRequest> burst =
        List.of(new RankRequest(1, 0, 0, 3, prompt(1)), new RankRequest(2, 9, 0, 3, prompt(2)));
    Map<Long, long[]> out =
        run(ranks, RankEngineConfig.DEFAULTS.withGuardCollective(false).withMaxRunning(8), burst);
    assertThat(out.get(1L)).containsExactly(0, 0);
    assertThat(out.get(2L)).containsExactly(0, 0);
  }
}
