package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A prompt's KV moved between two replicas through one L3 store ({@link TransferRole}): the
 * prefill replica publishes every full page of the prompt at the request's end and reports the
 * pages at the write's agreed commit, on every rank alike; the decode replica, on the same store,
 * fetches them whatever its prefetch threshold and policy, and computes what it does not find.
 */
@Timeout(60)
class PromptTransferTest {
  private static final int PAGE = 4;
  private static final CacheConfig CACHE = CacheConfig.of(PAGE, 64, 128);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(16).withMaxRunning(4);

  /** 10 full pages and 3 tokens. */
  private static final int[] PROMPT = prompt(43, 5);

  private static final int FULL_PAGES = PROMPT.length / PAGE;

  /**
   * Write thresholds no request reaches and a prefetch threshold above the prompt, under {@code
   * best_effort}: only the transfer's own rules can move the pages.
   */
  private static final L3Config L3 =
      L3Config.DEFAULTS
          .withBackupThreshold(1_000)
          .withPrefetchThreshold(1_000)
          .withPrefetchPolicy(io.kvtier.core.config.L3PrefetchPolicy.BEST_EFFORT);

  private static int[] prompt(int length, int seed) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = 1 + (i * 31 + seed * 7) % 500;
    }
    return p;
  }

  /** One call of the listener, on one rank. */
  record Event(String kind, long id, long a, long b, long c) {}

  static final class Recorder implements RequestListener {
    final List<Event> events = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void awaited(
        long tick, long id, int pagesExpected, int pagesFetched, int pagesRecomputed) {
      events.add(new Event("awaited", id, pagesExpected, pagesFetched, pagesRecomputed));
    }

    @Override
    public void published(long tick, long id, int pagesPublished) {
      events.add(new Event("published", id, pagesPublished, tick, 0));
    }

    @Override
    public void token(long tick, long id, int token) {
      events.add(new Event("token", id, token, 0, 0));
    }

    @Override
    public void ended(long tick, long id, RequestOutcome outcome) {
      events.add(new Event("ended:" + outcome, id, tick, 0, 0));
    }
  }

  /** A heap store shared by the replicas of a test; puts of the ranks in {@code failing} fail. */
  static final class SharedStore {
    final Map<PageKey, byte[][]> pages = Collections.synchronizedMap(new LinkedHashMap<>());

    /** The keys each rank put, in order. */
    final Map<Integer, List<PageKey>> putKeys = new java.util.concurrent.ConcurrentHashMap<>();

    KvStore rank(int rank, IntPredicate failing) {
      return new KvStore() {
        @Override
        public int existsPrefix(List<PageKey> keys) {
          int n = 0;
          while (n < keys.size() && pages.containsKey(keys.get(n))) {
            n++;
          }
          return n;
        }

        @Override
        public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
          for (int i = 0; i < keys.size(); i++) {
            byte[][] page = pages.get(keys.get(i));
            if (page == null) {
              return i;
            }
            for (int layer = 0; layer < page.length; layer++) {
              java.lang.foreign.MemorySegment.copy(
                  java.lang.foreign.MemorySegment.ofArray(page[layer]),
                  0,
                  host.block(hostPages[i], layer),
                  0,
                  page[layer].length);
            }
          }
          return keys.size();
        }

        @Override
        public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
          if (failing.test(rank)) {
            return 0;
          }
          int layers = host.spec().layout().layers();
          for (int i = 0; i < keys.size(); i++) {
            byte[][] page = new byte[layers][];
            for (int layer = 0; layer < layers; layer++) {
              page[layer] =
                  host.block(hostPages[i], layer).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            }
            pages.put(keys.get(i), page);
            putKeys.computeIfAbsent(rank, k -> new ArrayList<>()).add(keys.get(i));
          }
          return keys.size();
        }

        @Override
        public KvStoreStats stats() {
          return new KvStoreStats(0, 0, 0, 0, 0, 0);
        }

        @Override
        public void close() {}
      };
    }
  }

  /** One replica: R ranks on the store, each with its recorder. */
  private static final class Replica implements AutoCloseable {
    final RankHarness harness;
    final List<Recorder> recorders = new ArrayList<>();

    Replica(int ranks, SharedStore store, IntPredicate failing) {
      harness =
          new RankHarness(
              ranks,
              CACHE,
              ENGINE,
              Map.of(),
              (r, t) -> t,
              r -> new RankHarness.CountingModel(),
              r ->
                  new L3Setup(
                      L3, store.rank(r, failing), L3Executor.inline(), System::nanoTime, r, ranks));
      for (RankEngine e : harness.engines) {
        Recorder recorder = new Recorder();
        recorders.add(recorder);
        e.setRequestListener(recorder);
      }
    }

    /** Runs the request to its end (at most 200 ticks); returns every rank's stats or failure. */
    List<Object> serve(RankRequest request) throws InterruptedException {
      return harness.onRanks(
          (rank, engine) -> {
            for (int i = 0; i < 200; i++) {
              long tick = engine.tickNumber();
              harness.clocks.get(rank).set(tick * RankHarness.TICK_NANOS);
              engine.tick(
                  rank == 0
                      ? tick == 0 ? TickCommands.arrive(List.of(request)) : TickCommands.NONE
                      : null);
              if (tick > 0 && engine.isIdle()) {
                return engine.transfers();
              }
            }
            return "not idle after 200 ticks";
          });
    }

    @Override
    public void close() {
      harness.close();
    }
  }

  private static List<Event> kinds(Recorder r, String... kinds) {
    List<String> wanted = List.of(kinds);
    synchronized (r.events) {
      return r.events.stream().filter(e -> wanted.contains(e.kind())).toList();
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aPublishStoresEveryFullPromptPageAndASecondReplicaOnTheStoreFetchesThemAll(int ranks)
      throws Exception {
    SharedStore store = new SharedStore();
    try (Replica prefill = new Replica(ranks, store, r -> false)) {
      List<Object> results = prefill.serve(RankRequest.of(1, PROMPT, 1).publishing());
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isEqualTo(new TransferStats(1, FULL_PAGES, 0, 0, 0, 0, 0));
        // The outcome, then the end, at the same tick on every rank.
        assertThat(kinds(prefill.recorders.get(r), "published", "ended:FINISHED"))
            .extracting(Event::kind, Event::a)
            .containsExactly(
                org.assertj.core.groups.Tuple.tuple("published", (long) FULL_PAGES),
                org.assertj.core.groups.Tuple.tuple(
                    "ended:FINISHED",
                    kinds(prefill.recorders.get(0), "ended:FINISHED").get(0).a()));
      }
      // Every rank wrote its own shard of every full page.
      assertThat(store.pages).hasSize(ranks * FULL_PAGES);
    }
    try (Replica decode = new Replica(ranks, store, r -> false)) {
      List<Object> results =
          decode.serve(RankRequest.of(2, PROMPT, 4).awaitingTransfer(FULL_PAGES));
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isEqualTo(new TransferStats(0, 0, 0, 1, FULL_PAGES, FULL_PAGES, 0));
        assertThat(kinds(decode.recorders.get(r), "awaited"))
            .containsExactly(new Event("awaited", 2, FULL_PAGES, FULL_PAGES, 0));
        RankEngineStats stats = decode.harness.engines.get(r).stats();
        assertThat(stats.l3HitTokens()).isEqualTo(FULL_PAGES * PAGE);
        // Only the tokens past the last full page were computed for the prompt.
        assertThat(stats.prefillTokens()).isEqualTo(PROMPT.length - FULL_PAGES * PAGE);
        assertThat(kinds(decode.recorders.get(r), "token")).hasSize(4);
      }
    }
  }

  @Test
  void withoutTheHandleTheSecondReplicaDoesNotFetchBelowItsThreshold() throws Exception {
    SharedStore store = new SharedStore();
    try (Replica prefill = new Replica(1, store, r -> false)) {
      prefill.serve(RankRequest.of(1, PROMPT, 1).publishing());
    }
    try (Replica plain = new Replica(1, store, r -> false)) {
      plain.serve(RankRequest.of(2, PROMPT, 4));
      assertThat(plain.harness.engines.get(0).stats().l3HitTokens()).isZero();
      assertThat(plain.harness.engines.get(0).stats().prefillTokens()).isEqualTo(PROMPT.length);
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void aFailedPutPublishesFewerPagesWithoutAnError(int ranks) throws Exception {
    SharedStore store = new SharedStore();
    try (Replica prefill = new Replica(ranks, store, r -> true)) {
      List<Object> results = prefill.serve(RankRequest.of(1, PROMPT, 1).publishing());
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r)).isEqualTo(new TransferStats(1, 0, 1, 0, 0, 0, 0));
        assertThat(kinds(prefill.recorders.get(r), "published", "ended:FINISHED"))
            .extracting(Event::kind, Event::a)
            .startsWith(org.assertj.core.groups.Tuple.tuple("published", 0L))
            .hasSize(2);
        assertThat(kinds(prefill.recorders.get(r), "token")).hasSize(1);
      }
    }
  }

  @Test
  void ranksAgreeOnThePagesPublishedWhenOneRanksPutFails() throws Exception {
    SharedStore store = new SharedStore();
    try (Replica prefill = new Replica(2, store, r -> r == 1)) {
      List<Object> results = prefill.serve(RankRequest.of(1, PROMPT, 1).publishing());
      // Rank 0's put succeeded, rank 1's failed: the agreed commit fails it on both.
      assertThat(results).containsOnly(new TransferStats(1, 0, 1, 0, 0, 0, 0));
      List<Event> published0 = kinds(prefill.recorders.get(0), "published");
      assertThat(kinds(prefill.recorders.get(1), "published")).isEqualTo(published0);
      assertThat(published0).extracting(Event::a).containsExactly(0L);
      assertThat(prefill.harness.engines.get(0).replicaDigest())
          .isEqualTo(prefill.harness.engines.get(1).replicaDigest());
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2})
  void anAwaitedTransferWithMissingPagesRecomputesThem(int ranks) throws Exception {
    SharedStore store = new SharedStore();
    try (Replica prefill = new Replica(ranks, store, r -> false)) {
      prefill.serve(RankRequest.of(1, PROMPT, 1).publishing());
    }
    // Every rank's shard loses the pages from the 7th on (each rank put them in page order).
    for (int r = 0; r < ranks; r++) {
      List<PageKey> keys = store.putKeys.get(r);
      assertThat(keys).hasSize(FULL_PAGES);
      for (int page = 6; page < FULL_PAGES; page++) {
        store.pages.remove(keys.get(page));
      }
    }
    try (Replica decode = new Replica(ranks, store, r -> false)) {
      List<Object> results =
          decode.serve(RankRequest.of(2, PROMPT, 4).awaitingTransfer(FULL_PAGES));
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isEqualTo(new TransferStats(0, 0, 0, 1, FULL_PAGES, 6, FULL_PAGES - 6));
        RankEngineStats stats = decode.harness.engines.get(r).stats();
        assertThat(stats.l3HitTokens()).isEqualTo(6 * PAGE);
        assertThat(stats.prefillTokens()).isEqualTo(PROMPT.length - 6 * PAGE);
        assertThat(kinds(decode.recorders.get(r), "token")).hasSize(4);
        assertThat(kinds(decode.recorders.get(r), "ended:FINISHED")).hasSize(1);
      }
    }
  }

  @Test
  void aPublishWithoutAnL3StoreEndsWithNoPages() throws Exception {
    try (RankHarness h = new RankHarness(1, CACHE, ENGINE)) {
      Recorder recorder = new Recorder();
      h.engines.get(0).setRequestListener(recorder);
      h.ticks(
          10,
          t ->
              t == 0
                  ? TickCommands.arrive(List.of(RankRequest.of(1, PROMPT, 1).publishing()))
                  : TickCommands.NONE);
      assertThat(kinds(recorder, "published", "ended:FINISHED"))
          .extracting(Event::kind, Event::a)
          .startsWith(org.assertj.core.groups.Tuple.tuple("published", 0L))
          .hasSize(2);
      assertThat(h.engines.get(0).transfers()).isEqualTo(new TransferStats(1, 0, 1, 0, 0, 0, 0));
    }
  }

  @Test
  void theTransferFieldsAreChecked() {
    assertThatThrownBy(() -> new RankRequest(1, 0, 0, 1, PROMPT, TransferRole.PUBLISH, 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("transferPages=3");
    assertThatThrownBy(() -> RankRequest.of(1, PROMPT, 1).awaitingTransfer(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("transferPages=-1");
    assertThat(RankRequest.of(1, PROMPT, 1).awaitingTransfer(4))
        .isNotEqualTo(RankRequest.of(1, PROMPT, 1))
        .isEqualTo(new RankRequest(1, 0, 0, 1, PROMPT, TransferRole.AWAIT, 4));
  }
}
