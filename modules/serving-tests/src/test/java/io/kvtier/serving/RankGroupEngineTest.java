package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankGroupFailedException;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyModelRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.TinyPrompts.Prompt;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SeedExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The serving engine over the rank group: the same completions, token for token, as the
 * reference without a cache for 1, 2 and 4 tensor-parallel ranks, with prefix caching on and off,
 * with an L3 store and under eviction pressure; concurrent submissions batched into one tick;
 * cancel; a full queue; and a rank that fails.
 */
@ExtendWith(SeedExtension.class)
@Timeout(300)
class RankGroupEngineTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  private static KvTierConfig config(
      int ranks, int pageSize, int devicePages, Map<String, String> extra) {
    ModelConfig m = MODEL.config();
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(ranks)
            .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, pageSize)
            .devicePages(devicePages)
            .hostPages(devicePages * 3)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(60));
    extra.forEach(builder::set);
    return builder.build();
  }

  private static final AtomicInteger GROUPS = new AtomicInteger();

  private static EngineSettings settings() {
    return EngineSettings.DEFAULTS
        .withBatching(4, 16)
        .withGroup("rank-group-engine-test-" + GROUPS.incrementAndGet());
  }

  private static RankGroupEngine open(KvTierConfig config, EngineSettings settings) {
    return GenerationEngines.open(
        MODEL, config, settings, BackendMetrics.NOOP, RankSlot.Hooks.NONE);
  }

  private static List<Prompt> prompts(Random random, int count) {
    return TinyPrompts.sharedPrefixes(
        random,
        count,
        3,
        MODEL.config().vocabSize(),
        new int[] {8, 40},
        new int[] {1, 12},
        new int[] {1, 8});
  }

  /** Submits every prompt at once, then waits for all; returns the completions in order. */
  private static List<Completion> runAll(GenerationEngine engine, List<Prompt> prompts)
      throws Exception {
    List<Collected> streams = new ArrayList<>();
    for (Prompt p : prompts) {
      Collected c = new Collected();
      engine.submit(new GenerationEngine.GenerationRequest(p.tokens(), p.maxTokens()), c);
      streams.add(c);
    }
    List<Completion> out = new ArrayList<>();
    for (Collected c : streams) {
      out.add(c.get());
    }
    return out;
  }

  static Stream<Arguments> ranksAndCaching() {
    return Stream.of(
        Arguments.of(1, true),
        Arguments.of(2, true),
        Arguments.of(4, true),
        Arguments.of(1, false),
        Arguments.of(2, false),
        Arguments.of(4, false));
  }

  @ParameterizedTest(name = "ranks={0} prefixCaching={1}")
  @MethodSource("ranksAndCaching")
  void everyRankCountGivesTheReferenceTokens(int ranks, boolean caching, Random random)
      throws Exception {
    List<Prompt> prompts = prompts(random, 24);
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    long cached = 0;
    // A small device pool (12 pages of 4 tokens) against 24 prompts: eviction and load-backs.
    try (RankGroupEngine engine =
        open(
            config(ranks, 4, 24, Map.of()),
            settings().withQueueCapacity(64).withPrefixCaching(caching))) {
      List<Completion> out = runAll(engine, prompts);
      for (int i = 0; i < prompts.size(); i++) {
        Prompt p = prompts.get(i);
        assertThat(out.get(i).tokens())
            .as("request %d of %d ranks", i, ranks)
            .containsExactly(reference.generate(p.tokens(), p.maxTokens()));
        cached += out.get(i).cachedTokens();
      }
      RankEngineStats stats = engine.engineStats();
      assertThat(stats.finished()).isEqualTo(prompts.size());
      assertThat(engine.stats().requests()).isEqualTo(prompts.size());
      assertThat(engine.stats().ranks()).isEqualTo(ranks);
      // Submitted at once with 4 running: some tick advanced more than one request.
      assertThat(engine.stats().maxBatch()).isBetween(2L, 4L);
      assertThat(engine.stats().batchedTicks()).isPositive();
      // The heads really are split: every layer step summed its partial outputs over the group.
      if (ranks > 1) {
        assertThat(engine.collectiveCalls(TinyModelRunner.COMBINE_TAG)).isPositive();
      } else {
        assertThat(engine.collectiveCalls(TinyModelRunner.COMBINE_TAG)).isZero();
      }
      assertThat(engine.stats().cacheStats().deviceEvictions()).as("evictions").isPositive();
    }
    if (caching) {
      assertThat(cached).as("prefix hits").isPositive();
    } else {
      assertThat(cached).as("prefix hits without prefix caching").isZero();
    }
  }

  static Stream<Arguments> ranksAndStores() {
    return Stream.of(
        Arguments.of(1, "memory"),
        Arguments.of(2, "memory"),
        Arguments.of(4, "memory"),
        Arguments.of(1, "file"),
        Arguments.of(2, "file"),
        Arguments.of(4, "file"));
  }

  /**
   * With an L3 store under a small device and host pool, prefixes that come back after more
   * unique tokens than both tiers hold are fetched from L3, and the tokens stay the reference's.
   */
  @ParameterizedTest(name = "ranks={0} store={1}")
  @MethodSource("ranksAndStores")
  void anL3StoreGivesTheReferenceTokens(int ranks, String store, Random random, @TempDir Path dir)
      throws Exception {
    int pageSize = 4;
    int devicePages = 32;
    List<Prompt> prompts =
        TinyPrompts.withColdRevisits(
            random,
            prompts(random, 24),
            2,
            8 * pageSize,
            (devicePages * 8 + 16) * pageSize,
            MODEL.config().vocabSize());
    Map<String, String> keys =
        new java.util.HashMap<>(
            SimEngines.l3(store, dir, L3PrefetchPolicy.WAIT_COMPLETE, pageSize));
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    try (RankGroupEngine engine =
        open(config(ranks, pageSize, devicePages, keys), settings().withQueueCapacity(64))) {
      // Waves of 4 concurrent requests: batched, and ordered enough that cold prefixes leave the
      // device and the host before they come back.
      for (int from = 0; from < prompts.size(); from += 4) {
        List<Prompt> wave = prompts.subList(from, Math.min(prompts.size(), from + 4));
        List<Completion> out = runAll(engine, wave);
        for (int i = 0; i < wave.size(); i++) {
          assertThat(out.get(i).tokens())
              .as("request %d of %d ranks, %s store", from + i, ranks, store)
              .containsExactly(reference.generate(wave.get(i).tokens(), wave.get(i).maxTokens()));
        }
      }
      assertThat(engine.stats().hasL3()).isTrue();
      assertThat(engine.stats().l3HitTokens())
          .as("tokens fetched from L3 (%s)", engine.stats().l3Stats())
          .isPositive();
    }
  }

  /**
   * Rank 0 and rank 1 opened apart, as two processes of a one-rank-per-process collective do
   * (here two threads on the local collective): rank 0 serves, rank 1 follows until rank 0
   * closes the group, and the tokens are the reference's.
   */
  @Test
  void aFollowerRankOpenedApartServesWithRankZero(Random random) throws Exception {
    KvTierConfig config = config(2, 4, 48, Map.of());
    EngineSettings settings = settings();
    java.util.concurrent.CompletableFuture<Void> follower =
        new java.util.concurrent.CompletableFuture<>();
    Thread rank1 =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    GenerationEngines.follow(
                        MODEL, config, settings.withRank(1), BackendMetrics.NOOP, c -> c);
                    follower.complete(null);
                  } catch (Throwable e) {
                    follower.completeExceptionally(e);
                  }
                });
    List<Prompt> prompts = prompts(random, 8);
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    try (GenerationEngine engine =
        GenerationEngines.open(MODEL, config, settings.withRank(0), BackendMetrics.NOOP)) {
      assertThat(settings.withRank(0).isServingRank()).isTrue();
      assertThat(settings.withRank(1).isServingRank()).isFalse();
      List<Completion> out = runAll(engine, prompts);
      for (int i = 0; i < prompts.size(); i++) {
        assertThat(out.get(i).tokens())
            .containsExactly(
                reference.generate(prompts.get(i).tokens(), prompts.get(i).maxTokens()));
      }
    }
    follower.get(60, java.util.concurrent.TimeUnit.SECONDS);
    rank1.join();
    assertThatThrownBy(
            () -> GenerationEngines.open(MODEL, config, settings.withRank(1), BackendMetrics.NOOP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("follow");
  }

  /** A cancel ends the generation early with the tokens so far, which are the reference's. */
  @Test
  void aCancelledGenerationFinishesEarlyWithTheTokensSoFar(Random random) throws Exception {
    int[] prompt = TinyPrompts.tokens(random, 20, MODEL.config().vocabSize());
    int max = 300;
    int[] expected = new NoCacheRunner(MODEL).generate(prompt, max);
    try (RankGroupEngine engine = open(config(2, 4, 128, Map.of()), settings())) {
      java.util.concurrent.atomic.AtomicReference<GenerationEngine.Generation> handle =
          new java.util.concurrent.atomic.AtomicReference<>();
      CountDownLatch submitted = new CountDownLatch(1);
      Collected stream =
          new Collected() {
            @Override
            public synchronized void token(int token) {
              super.token(token);
              if (tokens.size() == 3) {
                awaitQuietly(submitted);
                handle.get().cancel();
                handle.get().cancel(); // twice is once
              }
            }
          };
      handle.set(engine.submit(new GenerationEngine.GenerationRequest(prompt, max), stream));
      submitted.countDown();
      Completion c = stream.get();
      assertThat(c.tokens().length).isBetween(3, max - 1);
      assertThat(c.tokens()).containsExactly(java.util.Arrays.copyOf(expected, c.tokens().length));
      assertThat(engine.engineStats().aborted()).isEqualTo(1);
      // The engine goes on serving.
      assertThat(Collected.generate(engine, prompt, 5).tokens())
          .containsExactly(java.util.Arrays.copyOf(expected, 5));
    }
  }

  /**
   * A prompt's whole pages join the cache at the end of its prefill: a request with the same
   * prompt that comes while the first still decodes computes only the tail shorter than a page
   * (until 2026-12-05 the pages joined when the first finished, and the second computed all).
   */
  @ParameterizedTest(name = "ranks={0} chunk={1}")
  @CsvSource({"1, 16", "2, 16", "1, 512", "2, 512"})
  void aPromptIsSharedWhileItsRequestStillDecodes(int ranks, int chunk, Random random)
      throws Exception {
    int[] prompt = TinyPrompts.tokens(random, 22, MODEL.config().vocabSize());
    int max = 200;
    int[] expected = new NoCacheRunner(MODEL).generate(prompt, max);
    // Chunks of 16: the last chunk's pages join at its step; of 512: the whole prompt in one step
    // with a prepared backup, which attaches there.
    try (RankGroupEngine engine =
        open(config(ranks, 4, 128, Map.of()), settings().withBatching(4, chunk))) {
      CountDownLatch decoding = new CountDownLatch(1);
      CountDownLatch secondSubmitted = new CountDownLatch(1);
      Collected first =
          new Collected() {
            @Override
            public synchronized void token(int token) {
              super.token(token);
              if (tokens.size() == 2) {
                // Rank 0 waits here, so the first is still decoding when the second is admitted.
                decoding.countDown();
                awaitQuietly(secondSubmitted);
              }
            }
          };
      engine.submit(new GenerationEngine.GenerationRequest(prompt, max), first);
      decoding.await();
      AtomicInteger firstTokens = new AtomicInteger(-1);
      Collected second =
          new Collected() {
            @Override
            public synchronized void finished(Completion completion) {
              // Rank 0's thread streams both: the first's tokens so far when the second ends.
              firstTokens.set(first.tokens.size());
              super.finished(completion);
            }
          };
      engine.submit(new GenerationEngine.GenerationRequest(prompt, 3), second);
      secondSubmitted.countDown();
      Completion shared = second.get();
      assertThat(firstTokens.get()).as("the first's tokens when the second ended").isBetween(2, 20);
      // 22 prompt tokens on 4-token pages: 5 whole pages, the last token always computed.
      assertThat(shared.cachedTokens()).isEqualTo(20);
      assertThat(shared.tokens()).containsExactly(java.util.Arrays.copyOf(expected, 3));
      if (chunk == 512) {
        // The first's prepared backup attached at its prefill step, while it still decodes.
        assertThat(engine.stats().cacheStats().preparedAttached()).isPositive();
      }
      assertThat(first.get().tokens()).containsExactly(expected);
    }
  }

  /**
   * A burst of one prompt: the first computes it; each other request either comes in the same
   * tick and waits for the first's prefill step, or comes later and finds its pages, so every one
   * but the first resumes from the prompt's whole pages (until 2026-12-05 those that came while
   * the first ran computed it all).
   */
  @ParameterizedTest(name = "ranks={0}")
  @ValueSource(ints = {1, 2})
  void aBurstOfOnePromptComputesItOnce(int ranks, Random random) throws Exception {
    int[] prompt = TinyPrompts.tokens(random, 62, MODEL.config().vocabSize());
    int max = 40;
    int[] expected = new NoCacheRunner(MODEL).generate(prompt, max);
    try (RankGroupEngine engine =
        open(config(ranks, 4, 256, Map.of()), settings().withBatching(8, 512))) {
      List<Collected> streams = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        Collected c = new Collected();
        engine.submit(new GenerationEngine.GenerationRequest(prompt, max), c);
        streams.add(c);
      }
      for (int i = 0; i < streams.size(); i++) {
        Completion c = streams.get(i).get();
        assertThat(c.tokens()).as("request %d", i).containsExactly(expected);
        // 62 prompt tokens on 4-token pages: 15 whole pages, the last token always computed.
        assertThat(c.cachedTokens()).as("request %d", i).isEqualTo(i == 0 ? 0 : 60);
      }
    }
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A full waiting queue refuses at once; the queued requests complete once the engine runs. */
  @Test
  void aFullQueueRefusesAtOnce(Random random) throws Exception {
    int[] prompt = TinyPrompts.tokens(random, 12, MODEL.config().vocabSize());
    try (RankGroupEngine engine =
        open(config(1, 4, 64, Map.of()), settings().withQueueCapacity(2))) {
      CountDownLatch release = new CountDownLatch(1);
      engine.pause(release).await();
      Collected a = new Collected();
      Collected b = new Collected();
      engine.submit(new GenerationEngine.GenerationRequest(prompt, 4), a);
      engine.submit(new GenerationEngine.GenerationRequest(prompt, 4), b);
      assertThatThrownBy(
              () ->
                  engine.submit(new GenerationEngine.GenerationRequest(prompt, 4), new Collected()))
          .isInstanceOf(GenerationEngine.EngineBusyException.class)
          .hasMessageContaining("2 requests wait");
      release.countDown();
      assertThat(a.get().tokens()).containsExactly(b.get().tokens());
      assertThat(engine.stats().waiting()).isZero();
      // Room again.
      assertThat(Collected.generate(engine, prompt, 4).tokens()).containsExactly(a.get().tokens());
    }
  }

  /** What only the engine knows is checked at submission, with the limit in the message. */
  @Test
  void aRequestBeyondTheLimitsIsRefusedAtSubmission() {
    try (RankGroupEngine engine = open(config(2, 4, 8, Map.of()), settings())) {
      assertThat(engine.contextLimit()).isEqualTo(32);
      assertThat(engine.vocabularySize()).isEqualTo(MODEL.config().vocabSize());
      assertThatThrownBy(
              () ->
                  engine.submit(
                      new GenerationEngine.GenerationRequest(new int[30], 3), new Collected()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("context limit of 32");
      assertThatThrownBy(
              () ->
                  engine.submit(
                      new GenerationEngine.GenerationRequest(new int[] {1, 512}, 3),
                      new Collected()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("outside the vocabulary");
    }
    assertThatThrownBy(() -> open(config(3, 4, 8, Map.of()), settings()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not divide");
  }

  /** Closing fails what still runs with a closed-engine cause; later submissions are refused. */
  @Test
  void closeFailsLiveGenerations(Random random) throws Exception {
    int[] prompt = TinyPrompts.tokens(random, 12, MODEL.config().vocabSize());
    RankGroupEngine engine = open(config(2, 4, 256, Map.of()), settings());
    CountDownLatch release = new CountDownLatch(1);
    engine.pause(release).await();
    Collected running = new Collected();
    engine.submit(new GenerationEngine.GenerationRequest(prompt, 900), running);
    Thread closer = Thread.ofPlatform().start(engine::close);
    while (closer.isAlive() && closer.getState() != Thread.State.WAITING) {
      Thread.onSpinWait();
    }
    release.countDown();
    closer.join();
    assertThatThrownBy(running::get)
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(
            () -> engine.submit(new GenerationEngine.GenerationRequest(prompt, 1), new Collected()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  /**
   * Rank 1's model fails in the middle of a forward pass: every rank stops at that step, every
   * live generation fails with the group's failure naming rank 1, later submissions throw it,
   * and closing returns (nothing hangs).
   */
  @ParameterizedTest(name = "ranks={0}")
  @org.junit.jupiter.params.provider.ValueSource(ints = {2, 4})
  void aRankThatFailsStopsTheGroupAndFailsEveryGeneration(int ranks, Random random)
      throws Exception {
    AtomicInteger layers = new AtomicInteger();
    RankSlot.Hooks hooks = failingRankOne(layers);
    List<Prompt> prompts = prompts(random, 6);
    RankGroupEngine engine =
        GenerationEngines.open(
            MODEL, config(ranks, 4, 256, Map.of()), settings(), BackendMetrics.NOOP, hooks);
    try {
      List<Collected> streams = new ArrayList<>();
      for (Prompt p : prompts) {
        Collected c = new Collected();
        engine.submit(new GenerationEngine.GenerationRequest(p.tokens(), 200), c);
        streams.add(c);
      }
      for (Collected c : streams) {
        assertThatThrownBy(c::get)
            .isInstanceOf(ExecutionException.class)
            .cause()
            .isInstanceOfSatisfying(
                RankGroupFailedException.class,
                f -> {
                  assertThat(f.failedRank()).isEqualTo(1);
                  assertThat(f.getMessage()).contains("injected: rank 1's model broke");
                });
      }
      assertThatThrownBy(
              () ->
                  engine.submit(
                      new GenerationEngine.GenerationRequest(prompts.get(0).tokens(), 1),
                      new Collected()))
          .isInstanceOf(RankGroupFailedException.class);
    } finally {
      engine.close();
    }
  }

  /** Hooks whose rank 1 throws at its 40th call to write a layer, in the middle of a step. */
  private static RankSlot.Hooks failingRankOne(AtomicInteger layers) {
    return RankSlot.Hooks.NONE.withRunner(
        (rank, runner) ->
            rank != 1
                ? runner
                : new ModelRunner() {
                  @Override
                  public int layers() {
                    return runner.layers();
                  }

                  @Override
                  public void writeLayer(ModelStep step, int layer) {
                    if (layers.incrementAndGet() == 40) {
                      throw new IllegalStateException("injected: rank 1's model broke");
                    }
                    runner.writeLayer(step, layer);
                  }

                  @Override
                  public int nextToken(ModelStep step) {
                    return runner.nextToken(step);
                  }

                  @Override
                  public int verifyPrefix(ModelStep step) {
                    return runner.verifyPrefix(step);
                  }

                  @Override
                  public void released(long requestId) {
                    runner.released(requestId);
                  }
                });
  }

  /**
   * A follower rank opened apart (as a process of its own) that fails: it throws the group's
   * failure, and rank 0's generations fail with it.
   */
  @Test
  void aFollowerRankThatFailsStopsRankZero(Random random) throws Exception {
    KvTierConfig config = config(2, 4, 256, Map.of());
    EngineSettings settings = settings();
    java.util.concurrent.CompletableFuture<Void> follower =
        new java.util.concurrent.CompletableFuture<>();
    AtomicInteger layers = new AtomicInteger();
    Thread rank1 =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    GenerationEngines.follow(
                        MODEL,
                        config,
                        settings.withRank(1),
                        BackendMetrics.NOOP,
                        failingRankOne(layers));
                    follower.complete(null);
                  } catch (Throwable e) {
                    follower.completeExceptionally(e);
                  }
                });
    try (GenerationEngine engine =
        GenerationEngines.open(MODEL, config, settings.withRank(0), BackendMetrics.NOOP)) {
      Collected c = new Collected();
      engine.submit(
          new GenerationEngine.GenerationRequest(prompts(random, 1).get(0).tokens(), 200), c);
      assertThatThrownBy(c::get)
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOfSatisfying(
              RankGroupFailedException.class, f -> assertThat(f.failedRank()).isEqualTo(1));
    }
    assertThatThrownBy(() -> follower.get(60, java.util.concurrent.TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(RankGroupFailedException.class);
    rank1.join();
  }

  /**
   * Closing leaves nothing joined: a group of the same name opens again in this JVM, after a
   * clean close and after a failed one.
   */
  @Test
  void closingReleasesEveryRanksCollective(Random random) throws Exception {
    int[] prompt = TinyPrompts.tokens(random, 10, MODEL.config().vocabSize());
    EngineSettings once = settings().withRank(0);
    KvTierConfig config = config(1, 4, 64, Map.of());
    for (int round = 0; round < 2; round++) {
      try (GenerationEngine engine =
          GenerationEngines.open(MODEL, config, once, BackendMetrics.NOOP)) {
        assertThat(Collected.generate(engine, prompt, 2).tokens()).hasSize(2);
      }
    }
    EngineSettings threads = settings();
    for (int round = 0; round < 2; round++) {
      RankGroupEngine failing =
          GenerationEngines.open(
              MODEL,
              config(2, 4, 256, Map.of()),
              threads,
              BackendMetrics.NOOP,
              failingRankOne(new AtomicInteger()));
      Collected c = new Collected();
      failing.submit(new GenerationEngine.GenerationRequest(prompt, 100), c);
      assertThatThrownBy(c::get).cause().isInstanceOf(RankGroupFailedException.class);
      failing.close();
    }
  }

  @Test
  void rankZeroPublishesTheKvEventsItsKeysAskFor(Random random) throws Exception {
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort();
    }
    Map<String, String> events =
        Map.of(
            "kvtier.events.publisher",
            "zmq",
            "kvtier.events.endpoint",
            "tcp://127.0.0.1:" + port,
            "kvtier.events.replay-endpoint",
            "");
    try (RankGroupEngine engine = open(config(2, 4, 48, events), settings())) {
      runAll(engine, prompts(random, 6));
      // Found through ServiceLoader: the engine names no publisher class.
      io.kvtier.events.KvEvents publisher =
          engine.onEngineThread(slot -> (io.kvtier.events.KvEvents) slot.events);
      io.kvtier.events.KvEventStats stats =
          engine.onEngineThread(
              slot -> {
                publisher.flush();
                return publisher.stats();
              });
      assertThat(publisher.publishing()).isTrue();
      assertThat(stats.sealed()).as("batches sealed on rank 0: %s", stats).isPositive();
      java.util.Optional<String> endpoint = publisher.endpoint();
      assertThat(endpoint).contains("tcp://127.0.0.1:" + port);
    }
  }

  @Test
  void aBadEventsKeyFailsTheOpenNamingTheKey() {
    assertThatThrownBy(
            () ->
                open(
                        config(2, 4, 48, Map.of("kvtier.events.publisher", "carrier-pigeon")),
                        settings())
                    .close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.events.publisher");
  }
}
