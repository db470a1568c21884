package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.ModelRankGroup.RankOutcome;
import io.kvtier.serving.TinyPrompts.Prompt;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * End-to-end correctness on 4 ranks driven by the reference {@link
 * io.kvtier.core.rank.RankEngine}: every rank generates, for every request, exactly the tokens of
 * an uncached run, whatever the write policy; and a flood of hundreds of concurrent requests
 * with shared prefixes and skewed per-rank copy delays completes (the collective watchdog turns
 * a stuck rank into an error, and a replicated tick bound a stuck request) with equal outputs;
 * and the same equality with an L3 store on 1 and 4 ranks, with every prefetch policy and store
 * faults.
 *
 * <p>{@code -Dkvtier.tests.multiplier=N} runs N times as many requests.
 */
@ExtendWith(SeedExtension.class)
class MultiRankEndToEndTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final int RANKS = 4;

  private static KvTierConfig config(
      int pageSize,
      int devicePages,
      WritePolicy write,
      EvictionPolicy eviction,
      Map<String, String> sim) {
    return config(RANKS, pageSize, devicePages, write, eviction, sim);
  }

  private static KvTierConfig config(
      int ranks,
      int pageSize,
      int devicePages,
      WritePolicy write,
      EvictionPolicy eviction,
      Map<String, String> sim) {
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
            .writePolicy(write)
            .evictionPolicy(eviction)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(30));
    sim.forEach(builder::set);
    return builder.build();
  }

  private static List<int[]> reference(List<Prompt> prompts) {
    NoCacheRunner runner = new NoCacheRunner(MODEL);
    List<int[]> expected = new ArrayList<>(prompts.size());
    for (Prompt p : prompts) {
      expected.add(runner.generate(p.tokens(), p.maxTokens()));
    }
    return expected;
  }

  private static void assertEqualOutputs(
      List<RankOutcome> outcomes, List<Prompt> prompts, List<int[]> expected) {
    for (int rank = 0; rank < outcomes.size(); rank++) {
      Map<Long, int[]> outputs = outcomes.get(rank).outputs();
      assertThat(outputs).as("rank %d finished every request", rank).hasSize(prompts.size());
      for (int i = 0; i < prompts.size(); i++) {
        int request = i;
        int r = rank;
        assertThat(outputs.get((long) i))
            .as(
                () ->
                    "rank "
                        + r
                        + ", request "
                        + request
                        + " (prompt of "
                        + prompts.get(request).tokens().length
                        + " tokens)")
            .containsExactly(expected.get(i));
      }
    }
    RankEngineStats first = outcomes.get(0).stats();
    for (RankOutcome o : outcomes) {
      // Replicated counters: every rank took the same decisions.
      assertThat(o.stats().deviceHitTokens()).isEqualTo(first.deviceHitTokens());
      assertThat(o.stats().hostHitTokens()).isEqualTo(first.hostHitTokens());
      assertThat(o.stats().l3HitTokens()).isEqualTo(first.l3HitTokens());
      assertThat(o.l3()).isEqualTo(outcomes.get(0).l3());
      assertThat(o.stats().ticks()).isEqualTo(first.ticks());
      assertThat(o.stats().kvMismatches()).as("loaded-back pages with wrong KV").isZero();
    }
  }

  /**
   * The drawn requests, then a tail that every write policy serves partly from the host, whatever
   * the draw (some draws keep every prefix that write_through_selective backs up on the device): a
   * 100-token prompt twice (its second use is the hit that policy backs up at), 800 tokens of
   * other prompts that evict it from the 512-token device pool, and the prompt again.
   */
  private static List<Prompt> withHostTail(List<Prompt> drawn) {
    List<Prompt> all = new java.util.ArrayList<>(drawn);
    int[] again = fixedPrompt(0);
    all.add(new Prompt(again, 1));
    all.add(new Prompt(again.clone(), 1));
    for (int f = 1; f <= 8; f++) {
      all.add(new Prompt(fixedPrompt(f), 1));
    }
    all.add(new Prompt(again.clone(), 2));
    return all;
  }

  /** A 100-token prompt of its own for each {@code salt}. */
  private static int[] fixedPrompt(int salt) {
    int[] p = new int[100];
    for (int i = 0; i < p.length; i++) {
      p[i] = 1 + (salt * 101 + i * 37) % (MODEL.config().vocabSize() - 1);
    }
    return p;
  }

  @ParameterizedTest
  @EnumSource(WritePolicy.class)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void fourRanksGenerateWhatAnUncachedRunDoes(WritePolicy write) throws Exception {
    List<Prompt> prompts =
        TinyPrompts.sharedPrefixes(
            TestSeeds.random("MultiRankEndToEndTest." + write),
            TestSeeds.scaled(60),
            5,
            512,
            new int[] {24, 120},
            new int[] {1, 30},
            new int[] {1, 8});
    prompts = withHostTail(prompts);
    List<int[]> expected = reference(prompts);
    KvTierConfig config =
        config(
            4,
            128,
            write,
            EvictionPolicy.LRU,
            Map.of(
                "sim.rank-skew",
                "1,1.5,0.8,2",
                "sim.h2d-latency",
                "100us",
                "sim.seed",
                Long.toString(TestSeeds.seedFor("sim." + write))));
    RankEngineConfig engine =
        RankEngineConfig.DEFAULTS
            .withMaxRunning(6)
            .withChunkTokens(48)
            .withDigestInterval(4)
            .withGuardCollective(false);

    List<RankOutcome> outcomes =
        ModelRankGroup.run(MODEL, config, engine, prompts, 3, 1, 50_000, new SimpleMeterRegistry());

    assertThat(outcomes).hasSize(RANKS);
    assertEqualOutputs(outcomes, prompts, expected);
    RankEngineStats stats = outcomes.get(0).stats();
    System.out.printf(
        "[e2e-4] %s: %d prompt tokens, %d device hits, %d host hits, %d ticks%n",
        write.configName(),
        stats.promptTokens(),
        stats.deviceHitTokens(),
        stats.hostHitTokens(),
        stats.ticks());
    assertThat(stats.deviceHitTokens()).as("tokens reused from the device").isPositive();
    assertThat(stats.hostHitTokens()).as("tokens loaded back from the host").isPositive();
  }

  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void aFloodOfConcurrentRequestsOnSkewedRanksCompletesWithEqualOutputs() throws Exception {
    List<Prompt> prompts =
        TinyPrompts.sharedPrefixes(
            TestSeeds.random("MultiRankFlood"),
            TestSeeds.scaled(300),
            8,
            512,
            new int[] {16, 96},
            new int[] {1, 24},
            new int[] {1, 6});
    List<int[]> expected = reference(prompts);
    // Rank 3 copies 8 times slower than the others, every rank with its own skew and jitter:
    // the MIN commit waits for it, and nothing may hang or diverge meanwhile.
    KvTierConfig config =
        config(
            4,
            256,
            WritePolicy.WRITE_THROUGH,
            EvictionPolicy.LFU,
            Map.of(
                "sim.slow-rank",
                "3",
                "sim.slow-factor",
                "8",
                "sim.rank-skew",
                "1,1.3,0.7,1",
                "sim.h2d-latency",
                "300us",
                "sim.d2h-latency",
                "500us",
                "sim.jitter",
                "0.5",
                "sim.seed",
                Long.toString(TestSeeds.seedFor("sim.flood"))));
    RankEngineConfig engine =
        RankEngineConfig.DEFAULTS
            .withMaxRunning(32)
            .withChunkTokens(32)
            .withDigestInterval(8)
            .withGuardCollective(false);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();

    // The run takes 10,000 to 20,000 ticks in all on a 2-core machine (the live requests wait
    // on rank 3's copies, and a tick without work takes microseconds); the longest stretch
    // without progress was about 500 ticks. A bound of 20,000 ticks in all failed once in CI.
    List<RankOutcome> outcomes =
        ModelRankGroup.run(MODEL, config, engine, prompts, 50, 1, 20_000, registry);

    assertEqualOutputs(outcomes, prompts, expected);
    RankEngineStats stats = outcomes.get(0).stats();
    System.out.printf(
        "[flood] %d requests, %d prompt tokens, %d device hits, %d host hits," + " %d ticks%n",
        prompts.size(),
        stats.promptTokens(),
        stats.deviceHitTokens(),
        stats.hostHitTokens(),
        stats.ticks());
    assertThat(stats.reusedTokens()).isPositive();
    Timer recv = registry.find("kvtier.collective.latency").tag("tag", "recv").timer();
    assertThat(recv).isNotNull();
    assertThat(recv.count())
        .as("recv broadcasts, one per tick per rank")
        .isEqualTo(RANKS * stats.ticks());
  }

  static Stream<Arguments> l3Configurations() {
    // Best effort takes what is fetched at the first agreement after the fetch started: with
    // inline store calls that is everything, so its L3 hits do not hang on thread timing.
    return Stream.of(
        Arguments.of(
            4, "memory", L3PrefetchPolicy.BEST_EFFORT, WritePolicy.WRITE_THROUGH, 0.0, true),
        Arguments.of(
            4,
            "file",
            L3PrefetchPolicy.WAIT_COMPLETE,
            WritePolicy.WRITE_THROUGH_SELECTIVE,
            0.0,
            false),
        // A write of a chain fails if any rank loses any of its pages, and a shared prefix is a
        // chain of up to 128 pages: at 0.01 per page on 4 ranks almost every prefix write failed
        // (0.99^512), and with some seeds no prefetch ever found a prefix. At 0.001 (4 ranks)
        // and 0.004 (1 rank) about half the first attempts commit, and a failed one is retried
        // at the next hit.
        Arguments.of(4, "memory", L3PrefetchPolicy.TIMEOUT, WritePolicy.WRITE_BACK, 0.001, false),
        Arguments.of(
            1, "memory", L3PrefetchPolicy.TIMEOUT, WritePolicy.WRITE_THROUGH, 0.004, false),
        Arguments.of(1, "file", L3PrefetchPolicy.BEST_EFFORT, WritePolicy.WRITE_BACK, 0.001, true));
  }

  /**
   * With an L3 store under a host tier a quarter larger than the device pool, and more prefix
   * groups than the host holds: prefixes go device, host, L3 and come back by a prefetch the
   * ranks agree on, each rank reading its own shard (and, with faults, losing different pages).
   */
  @ParameterizedTest(name = "{0} ranks, {1} store, {2}, {3}, faults {4}, inline {5}")
  @MethodSource("l3Configurations")
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void ranksWithAnL3StoreGenerateWhatAnUncachedRunDoes(
      int ranks,
      String store,
      L3PrefetchPolicy policy,
      WritePolicy write,
      double faults,
      boolean inline,
      @TempDir Path dir)
      throws Exception {
    int pageSize = 4;
    int devicePages = 128;
    int hostPages = devicePages * 5 / 4;
    // The random stream revisits a group only by chance, and with some seeds no group ever
    // comes back after it left the host (every prefetch then finds nothing in L3: an engine
    // that is right, a test that proved nothing about L3). Three cold prefixes of 16 pages come
    // back after more unique tokens than the device and the host hold, so every seed has L3
    // hits (three, so that a page a fault drops on some rank cannot take them all).
    List<Prompt> prompts =
        TinyPrompts.withColdRevisits(
            TestSeeds.random("MultiRankEndToEndTest.l3.cold." + ranks + store + policy),
            TinyPrompts.sharedPrefixes(
                TestSeeds.random("MultiRankEndToEndTest.l3." + ranks + store + policy),
                TestSeeds.scaled(80),
                10,
                512,
                new int[] {24, 120},
                new int[] {1, 30},
                new int[] {1, 8}),
            3,
            16 * pageSize,
            (devicePages + hostPages + 16) * pageSize,
            512);
    List<int[]> expected = reference(prompts);
    Map<String, String> keys = new HashMap<>(SimEngines.l3(store, dir, policy, pageSize));
    keys.put(KvTierKeys.HOST_PAGES, Integer.toString(hostPages));
    keys.putAll(
        Map.of(
            "sim.rank-skew",
            ranks == 1 ? "1" : "1,1.5,0.8,2",
            "sim.h2d-latency",
            "100us",
            "sim.seed",
            Long.toString(TestSeeds.seedFor("sim.l3." + store + policy))));
    KvTierConfig config = config(ranks, pageSize, devicePages, write, EvictionPolicy.LRU, keys);
    RankEngineConfig engine =
        RankEngineConfig.DEFAULTS
            .withMaxRunning(6)
            .withChunkTokens(48)
            .withDigestInterval(4)
            .withGuardCollective(false);

    // One arrival every other tick: a group's pages have time to leave the device and the host
    // before it comes back.
    List<RankOutcome> outcomes =
        ModelRankGroup.run(
            MODEL,
            config,
            engine,
            prompts,
            1,
            2,
            50_000,
            new SimpleMeterRegistry(),
            new ModelRankGroup.L3Wiring(
                inline, faults, TestSeeds.seedFor("l3.faults." + store + policy)));

    assertThat(outcomes).hasSize(ranks);
    assertEqualOutputs(outcomes, prompts, expected);
    RankEngineStats stats = outcomes.get(0).stats();
    System.out.printf(
        "[e2e-l3-%d] %s %s %s faults %.3f: %d prompt tokens, %d device hits,"
            + " %d host hits, %d l3 hits, %d ticks; %s%n",
        ranks,
        store,
        policy.configName(),
        write.configName(),
        faults,
        stats.promptTokens(),
        stats.deviceHitTokens(),
        stats.hostHitTokens(),
        stats.l3HitTokens(),
        stats.ticks(),
        outcomes.get(0).l3());
    assertThat(outcomes.get(0).l3().pagesWritten()).as("pages written to L3").isPositive();
    // The equality above proves something about L3 only if pages came back from it.
    assertThat(stats.l3HitTokens()).as("tokens fetched from L3 and loaded back").isPositive();
  }

  /**
   * A prompt of whole pages sent twice: the second time every prompt token is cached, and the
   * engine must still compute the last prompt token to produce the first output token (a
   * scheduler that matched the whole prompt never generated anything here).
   */
  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES)
  void aRepeatedPromptOfWholePagesCompletes() throws Exception {
    int[] prompt = TinyPrompts.tokens(TestSeeds.random("MultiRankRepeat"), 32, 512);
    List<Prompt> prompts = List.of(new Prompt(prompt, 4), new Prompt(prompt.clone(), 4));
    KvTierConfig config = config(4, 64, WritePolicy.WRITE_THROUGH, EvictionPolicy.LRU, Map.of());
    RankEngineConfig engine = RankEngineConfig.DEFAULTS.withGuardCollective(false);

    // One arrival every 50 ticks: the first request has finished when the second arrives.
    List<RankOutcome> outcomes =
        ModelRankGroup.run(
            MODEL, config, engine, prompts, 1, 50, 10_000, new SimpleMeterRegistry());

    assertEqualOutputs(outcomes, prompts, reference(prompts));
  }
}
