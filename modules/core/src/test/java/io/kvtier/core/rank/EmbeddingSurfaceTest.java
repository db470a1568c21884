package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.CacheView;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.RequestOptions;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.TransferDirection;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The surface a server that embeds kvtier drives the ranks through: the engine's steps, and a
 * read-only view. A replicated change made to the cache outside a step is refused, naming the
 * method; the single-rank commit forms are refused on several ranks; and the documented way (the
 * six steps) keeps 2 ranks equal when a copy fails on one of them.
 */
@Timeout(60)
class EmbeddingSurfaceTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8).withMaxRunning(2);

  @BeforeAll
  static void quietFailureLog() {
    Logger.getLogger("io.kvtier.core.cache").setLevel(Level.SEVERE);
  }

  private static int[] prompt(int id, int length) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 ? i : 1000 + 37 * id + i;
    }
    return p;
  }

  /** A prompt that shares no page with {@link #prompt}'s. */
  private static int[] distinct(int length) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = 50_000 + i;
    }
    return p;
  }

  private static TickCommands arrive(long... ids) {
    List<RankRequest> list = new ArrayList<>();
    for (long id : ids) {
      list.add(RankRequest.of(id, prompt((int) id, 14), 2));
    }
    return TickCommands.arrive(list);
  }

  /** Runs a few ticks so that the caches hold nodes and pending writes. */
  private static void warmUp(RankHarness h) throws InterruptedException {
    h.ticks(10, t -> t == 0 ? arrive(1, 2) : TickCommands.NONE);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void replicatedMutatorsOutsideTheStepsAreRefusedNamingTheMethod(int n) throws Exception {
    try (RankHarness h = new RankHarness(n, CACHE, ENGINE)) {
      warmUp(h);
      RankCache cache = h.caches.get(1);
      long digest = h.engines.get(1).replicaDigest();
      Map<String, Consumer<RankCache>> calls = new java.util.LinkedHashMap<>();
      calls.put("match", c -> c.match(0, prompt(1, 14)));
      calls.put("admit", c -> c.admit(99, prompt(99, 14)));
      calls.put("abort", c -> c.abort(1));
      calls.put("evictDevice", c -> c.evictDevice(1));
      calls.put("evictHost", c -> c.evictHost(1));
      calls.put("commits().commitWrites", c -> c.commits().commitWrites(0, new BitSet()));
      calls.put("commits().commitLoads", c -> c.commits().commitLoads(0, new BitSet()));
      calls.put("commits().commitL3Writes", c -> c.commits().commitL3Writes(0, new BitSet()));
      calls.put("startPrefetch", c -> c.startPrefetch(98, prompt(98, 14), RequestOptions.DEFAULT));
      calls.put("prepareBackup", c -> c.prepareBackup(1));
      for (Map.Entry<String, Consumer<RankCache>> call : calls.entrySet()) {
        assertThatThrownBy(() -> call.getValue().accept(cache))
            .as(call.getKey())
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("RankCache." + call.getKey() + " called outside the steps")
            .hasMessageContaining("RankEngine.view()");
      }
      assertThat(h.engines.get(1).replicaDigest()).as("nothing changed").isEqualTo(digest);
      // The group goes on: nothing was half-applied.
      h.ticks(20, t -> t == 10 ? TickCommands.END : TickCommands.NONE);
      for (int r = 1; r < n; r++) {
        assertThat(h.engines.get(r).replicaDigest()).isEqualTo(h.engines.get(0).replicaDigest());
      }
    }
  }

  /**
   * A listener that looks a prompt up through {@code RankCache.match} inside a step, on one rank
   * only: the match would touch that replica's clocks, so it is refused on the spot, and the
   * listener's failure fails every rank together, naming it.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aCacheMutatorCalledFromAListenerInsideAStepFailsTheGroupNamingTheRank(int n)
      throws Exception {
    try (RankHarness h = new RankHarness(n, CACHE, ENGINE.withDigestInterval(1))) {
      RankCache cache = h.caches.get(1);
      h.engines
          .get(1)
          .setRequestListener(
              new RequestListener() {
                @Override
                public void admitted(long tick, long id, int deviceHitTokens, int hostHitTokens) {
                  cache.match(0, prompt((int) id, 14));
                }
              });
      List<Object> results =
          h.onRanks(
              (rank, e) -> {
                for (long t = 0; t < 20; t++) {
                  try {
                    e.tick(rank == 0 ? (t == 0 ? arrive(1, 2) : TickCommands.NONE) : null);
                  } catch (RuntimeException failed) {
                    return failed;
                  }
                }
                return "no failure in 20 ticks";
              });
      for (int r = 0; r < n; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isInstanceOfSatisfying(
                RankGroupFailedException.class,
                f -> {
                  assertThat(f.failedRank()).isEqualTo(1);
                  assertThat(f.step()).isEqualTo(TickStep.ADMIT);
                  assertThat(f.causeDescription())
                      .contains("RankCache.match called from a callback of a RankEngine step");
                });
      }
    }
  }

  /**
   * The refusal comes before any change, on every rank and on one rank alike: a listener or a
   * model that catches it leaves every replica as it was, and the group goes on equal.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aRefusedCallbackChangesNothing(int n) throws Exception {
    List<String> refused = java.util.Collections.synchronizedList(new ArrayList<>());
    List<RankCache> caches = new ArrayList<>();
    try (RankHarness h =
        new RankHarness(
            n,
            CACHE,
            ENGINE.withDigestInterval(1),
            Map.of(),
            (r, t) -> t,
            r ->
                new RankHarness.CountingModel() {
                  @Override
                  public void writeLayer(ModelStep step, int layer) {
                    if (r == n - 1 && layer == 0) {
                      try {
                        caches.get(r).evictDevice(1);
                      } catch (IllegalStateException e) {
                        refused.add("model: " + e.getMessage());
                      }
                    }
                    super.writeLayer(step, layer);
                  }
                })) {
      caches.addAll(h.caches);
      h.engines
          .get(n - 1)
          .setRequestListener(
              new RequestListener() {
                @Override
                public void ended(long tick, long id, RequestOutcome outcome) {
                  try {
                    caches.get(n - 1).match(0, prompt((int) id, 14));
                  } catch (IllegalStateException e) {
                    refused.add("listener: " + e.getMessage());
                  }
                }
              });
      h.ticks(20, t -> t == 0 ? arrive(1, 2) : t == 10 ? TickCommands.END : TickCommands.NONE);
      assertThat(refused)
          .as("both callbacks were refused")
          .anyMatch(m -> m.startsWith("model: RankCache.evictDevice called from a callback"))
          .anyMatch(m -> m.startsWith("listener: RankCache.match called from a callback"));
      for (int r = 1; r < n; r++) {
        assertThat(h.engines.get(r).replicaDigest()).isEqualTo(h.engines.get(0).replicaDigest());
      }
      assertThat(h.engines.get(0).isDrained()).isTrue();
    }
  }

  @Test
  void theSingleRankCommitFormsAreRefusedOnSeveralRanksNamingTheAgreedForm() throws Exception {
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE)) {
      assertThat(bindAgainFails(h.caches.get(0)))
          .as("the engine bound its cache at construction")
          .hasMessageContaining("driven by an engine already");
      RankCache probe = RankCache.withoutMemory(CacheConfig.of(4, 8, 0));
      var token = probe.bindSchedule(2);
      token.enter();
      try {
        assertThatThrownBy(() -> probe.commits().commitWrites(0))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("RankCache.commits().commitWrites(int) is for a single rank only")
            .hasMessageContaining("commitWrites(int, BitSet)");
        assertThatThrownBy(() -> probe.commits().commitLoads(0))
            .hasMessageContaining("commitLoads(int, BitSet)");
        assertThatThrownBy(probe::sync).hasMessageContaining("RankCache.sync() is for a single");
        // The agreed forms are what a step uses.
        probe.commits().commitWrites(0, new BitSet());
        probe.commits().commitLoads(0, new BitSet());
      } finally {
        token.exit();
      }
      RankCache single = RankCache.withoutMemory(CacheConfig.of(4, 8, 0));
      var one = single.bindSchedule(1);
      one.enter();
      try {
        assertThat(single.sync()).isZero();
      } finally {
        one.exit();
      }
    }
  }

  private static IllegalStateException bindAgainFails(RankCache cache) {
    try {
      cache.bindSchedule(2);
    } catch (IllegalStateException e) {
      return e;
    }
    throw new AssertionError("a second binding was accepted");
  }

  @Test
  void theViewReadsWithoutChangingAndCannotBeCastToTheCache() throws Exception {
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE)) {
      warmUp(h);
      RankEngine e = h.engines.get(0);
      CacheView view = e.view();
      assertThat(view).isNotInstanceOf(RankCache.class);
      assertThat(e.cache()).isNotInstanceOf(RankCache.class);
      long digest = e.replicaDigest();
      long clock = view.logicalClock();
      assertThat(view.cachedLength(0, prompt(1, 14))).isEqualTo(12);
      assertThat(view.cachedLength(0, prompt(7, 14))).as("the shared first 8 tokens").isEqualTo(8);
      assertThat(view.cachedLength(5, prompt(1, 14))).as("another namespace").isZero();
      assertThat(view.replicaDigest()).isEqualTo(h.caches.get(0).replicaDigest());
      assertThat(view.deviceUsage()).isEqualTo(h.caches.get(0).deviceUsage());
      assertThat(view.stats()).isEqualTo(h.caches.get(0).stats());
      assertThat(view.pageKeys(0, prompt(1, 12))).hasSize(3);
      assertThat(view.logicalClock()).as("a lookup touches nothing").isEqualTo(clock);
      assertThat(e.replicaDigest()).isEqualTo(digest);
    }
  }

  /**
   * The engine's documented sequence (receive, sync, admit, forward, finish, check per tick) on
   * 2 and 4 ranks whose rank 1 fails its first backup copy and its first load-back copy (a long
   * prompt evicts the first prompts' pages from the device, and those prompts come again and load
   * their pages back from the host): every tick ends with equal digests (the digest check runs
   * every tick) and every rank commits the same failures.
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void theDocumentedStepsKeepTheRanksEqualWhenACopyFailsOnOne(int n) throws Exception {
    CacheConfig small = CacheConfig.of(4, 12, 64);
    try (RankHarness h =
        new RankHarness(
            n,
            small,
            ENGINE.withDigestInterval(1),
            Map.of(),
            (r, t) ->
                r == 1
                    ? new FailingTransferEngine(
                        new FailingTransferEngine(t, TransferDirection.DEVICE_TO_HOST, 0),
                        TransferDirection.HOST_TO_DEVICE,
                        0)
                    : t)) {
      RankHarness.TickFeed feed =
          t ->
              switch ((int) t) {
                case 0 -> arrive(1, 2);
                case 8 -> arrive(3, 4);
                case 16 -> arrive(5, 6);
                // A long prompt of its own: its pages evict the others' from the device, which
                // leaves their backed-up pages on the host only.
                case 20 -> TickCommands.arrive(List.of(RankRequest.of(50, distinct(40), 2)));
                // The first prompts again: their host pages are loaded back, and rank 1's first
                // load-back copy fails.
                case 32 ->
                    TickCommands.arrive(
                        List.of(
                            RankRequest.of(101, prompt(1, 14), 2),
                            RankRequest.of(102, prompt(2, 14), 2)));
                case 36 ->
                    TickCommands.arrive(
                        List.of(
                            RankRequest.of(103, prompt(3, 14), 2),
                            RankRequest.of(104, prompt(4, 14), 2)));
                case 44 -> TickCommands.END;
                default -> TickCommands.NONE;
              };
      List<Object> out =
          h.onRanks(
              (rank, e) -> {
                List<Long> digests = new ArrayList<>();
                List<String> requeues = new ArrayList<>();
                e.setRequestListener(
                    new RequestListener() {
                      @Override
                      public void requeued(long tick, long id, int lostTokens) {
                        requeues.add("requeued " + id + " losing " + lostTokens);
                      }

                      @Override
                      public void admitted(
                          long tick, long id, int device, int host, int l3, int usable) {
                        if (requeues.stream().anyMatch(q -> q.startsWith("requeued " + id + " "))) {
                          requeues.add("admitted again " + id);
                        }
                      }

                      @Override
                      public void ended(long tick, long id, RequestOutcome outcome) {
                        if (requeues.stream().anyMatch(q -> q.startsWith("requeued " + id + " "))) {
                          requeues.add("ended " + id + " " + outcome);
                        }
                      }
                    });
                for (long t = 0; !e.isDrained(); t++) {
                  assertThat(t).as("ticks to drain").isLessThan(300);
                  h.clocks.get(rank).set(t * RankHarness.TICK_NANOS);
                  e.receive(rank == 0 ? feed.commands(t) : null);
                  e.sync();
                  e.admit();
                  e.forward();
                  e.finish();
                  e.check();
                  digests.add(e.view().replicaDigest());
                }
                CacheInvariants.checkIdle(h.caches.get(rank));
                return List.of(digests, requeues);
              });
      assertThat(out.get(0)).isInstanceOf(List.class);
      @SuppressWarnings("unchecked")
      List<String> requeues = (List<String>) ((List<?>) out.get(0)).get(1);
      // Each requeued request is announced, admitted again and finished, on every rank alike.
      assertThat(requeues).isNotEmpty();
      for (String q : requeues.stream().filter(q -> q.startsWith("requeued ")).toList()) {
        String id = q.split(" ")[1];
        assertThat(Integer.parseInt(q.split(" ")[3])).as(q).isPositive();
        assertThat(requeues).contains("admitted again " + id, "ended " + id + " FINISHED");
        assertThat(requeues.indexOf("admitted again " + id)).isGreaterThan(requeues.indexOf(q));
      }
      CacheView a = h.engines.get(0).view();
      for (int r = 1; r < n; r++) {
        assertThat(out.get(r)).as("rank %d's digests and requeues", r).isEqualTo(out.get(0));
        assertThat(h.engines.get(r).view().stats()).isEqualTo(a.stats());
      }
      assertThat(a.stats().backupsFailed()).as("rank 1's failed backup, agreed").isPositive();
      assertThat(a.stats().loadsFailed()).as("rank 1's failed load-back, agreed").isPositive();
      assertThat(a.stats().loadsCommitted()).as("a load-back that succeeded").isPositive();
      assertThat(h.engines.get(0).stats().loadFailureRecomputes())
          .as("the requests of the failed load computed their prefix again")
          .isPositive();
    }
  }
}
