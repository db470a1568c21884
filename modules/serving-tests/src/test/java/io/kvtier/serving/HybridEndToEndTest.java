package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.metrics.KvTierMeters;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Output equality for hybrid layer mixes with the cache on: a seeded multi-turn workload (a shared
 * system prompt, conversations whose every turn resends the history, exact resends of page-aligned
 * prompts) runs in waves of concurrent turns on 1 and 2 ranks, with a device pool far smaller
 * than the workload (eviction) and with or without a host tier; every request's tokens equal the
 * cache-off reference. The cache may only be used where the model resumes exactly: with a
 * recurrent layer from the deepest recurrent-state snapshot of the match (docs/HYBRID.md §5), so
 * the usable hits are at most the matched ones, and the engine's counters say so. A mix written
 * {@code MIX/windows} keeps its SWA layers' KV as windows in the snapshots instead of the pages
 * (docs/HYBRID.md §4): its pages hold the full-attention layers only, so its device pool gets as
 * many more pages as the same bytes hold, and it resumes only at snapshots too.
 *
 * <p>{@code -Dkvtier.tests.multiplier=N} runs N times as many conversations.
 */
@ExtendWith(SeedExtension.class)
class HybridEndToEndTest {
  private static final int PAGE = 4;
  private static final int DEVICE_PAGES = 64;
  private static final AtomicInteger GROUPS = new AtomicInteger();

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (String mix :
        List.of(
            "full,full,full",
            "full,swa:8,swa:24",
            "full,recurrent,full",
            "swa:8,full,recurrent",
            "full,swa:8,swa:24/windows",
            "swa:8,full,recurrent/windows")) {
      for (int hostRatio : new int[] {0, 3}) {
        for (int ranks : new int[] {1, 2}) {
          out.add(Arguments.of(mix, hostRatio, ranks));
        }
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0}, host ratio {1}, {2} ranks")
  @MethodSource("cases")
  @Timeout(180)
  void cachedOutputsEqualUncachedOutputs(String mixText, int hostRatio, int ranks, Random random)
      throws Exception {
    run(mixText, hostRatio, ranks, Map.of(), random);
  }

  static Stream<Arguments> l3Cases() {
    List<Arguments> out = new ArrayList<>();
    for (String mix :
        List.of(
            "full,swa:8,swa:24",
            "swa:8,full,recurrent",
            "full,swa:8,swa:24/windows",
            "swa:8,full,recurrent/windows")) {
      for (int ranks : new int[] {1, 4}) {
        out.add(Arguments.of(mix, ranks));
      }
    }
    return out.stream();
  }

  /**
   * With an L3 store under a host tier as small as the device pool: prefixes leave the host and
   * come back from the store by prefetch; the keys carry the layer mix ({@link
   * ModelConfig#l3ModelId}).
   *
   * <p>16 conversations, not the 8 of the other cases: how many turns find their prefix only in
   * the store depends on how the concurrent waves interleave with the copies, and with 8 a case
   * found none in about 1 of 80 runs (a clean-clone CI run once failed so). With 16, 160 seeded
   * runs here found at least 140 L3 tokens each. A host tier twice the device pool is no cure: it
   * keeps more of the history, so fewer turns reach the store (8 conversations, ratio 2: no L3
   * hit in 11 to 12 of 20 runs per mix).
   */
  @ParameterizedTest(name = "{0}, L3, {1} ranks")
  @MethodSource("l3Cases")
  @Timeout(180)
  void cachedOutputsEqualUncachedOutputsWithAnL3Tier(String mixText, int ranks, Random random)
      throws Exception {
    TinyTransformer model = model(mixText);
    Map<String, String> l3 =
        new java.util.HashMap<>(
            SimEngines.l3("memory", null, L3PrefetchPolicy.WAIT_COMPLETE, PAGE));
    l3.put(KvTierKeys.L3_MODEL_ID, model.config().l3ModelId());
    Totals t = run(mixText, 1, ranks, l3, TestSeeds.scaled(16), random);
    assertThat(t.l3).as("L3 hits").isPositive();
  }

  /**
   * The {@code asserting} pools under slow, jittered copies: rebuilding a recurrent state reads
   * the matched pages while backups and load-backs of them may be in flight, under the pools'
   * ownership checks (a write into a page a copy in flight reads fails). That it writes none of
   * the matched pages at all is {@link HybridRunnerTest}'s to show: rewriting them with the same
   * bytes passes here when no copy is in flight at that moment.
   */
  @ParameterizedTest(name = "{0}, asserting pools, {1} ranks")
  @MethodSource("assertingCases")
  @Timeout(180)
  void theRecomputedPrefixWritesNoSharedPage(String mixText, int ranks, Random random)
      throws Exception {
    run(
        mixText,
        3,
        ranks,
        Map.of(
            KvTierKeys.DEVICE,
            "asserting",
            KvTierKeys.HOST,
            "asserting",
            "asserting.sim.h2d-latency",
            "200us",
            "asserting.sim.d2h-latency",
            "300us",
            "asserting.sim.jitter",
            "0.5"),
        random);
  }

  static Stream<Arguments> policyCases() {
    return Stream.of(
        Arguments.of("swa:8,full,recurrent", WritePolicy.WRITE_BACK, EvictionPolicy.LFU, 2),
        Arguments.of(
            "full,recurrent,full", WritePolicy.WRITE_THROUGH_SELECTIVE, EvictionPolicy.MRU, 2),
        Arguments.of("full,swa:8,swa:24", WritePolicy.WRITE_BACK, EvictionPolicy.SLRU, 2),
        Arguments.of("swa:8,full,recurrent", WritePolicy.WRITE_THROUGH, EvictionPolicy.LRU, 4),
        Arguments.of("full,swa:8,swa:24/windows", WritePolicy.WRITE_BACK, EvictionPolicy.LFU, 2),
        Arguments.of(
            "swa:8,full,recurrent/windows",
            WritePolicy.WRITE_THROUGH_SELECTIVE,
            EvictionPolicy.MRU,
            4));
  }

  /**
   * Write-back (victims backed up at eviction) and selective write-through, other eviction
   * orders; and 4 ranks.
   */
  @ParameterizedTest(name = "{0}, {1}, {2}, {3} ranks")
  @MethodSource("policyCases")
  @Timeout(180)
  void cachedOutputsEqualUncachedOutputsUnderOtherPolicies(
      String mixText, WritePolicy write, EvictionPolicy eviction, int ranks, Random random)
      throws Exception {
    run(
        mixText,
        3,
        ranks,
        Map.of(
            KvTierKeys.WRITE_POLICY,
            write.configName(),
            KvTierKeys.EVICTION_POLICY,
            eviction.configName()),
        random);
  }

  static Stream<Arguments> assertingCases() {
    return Stream.of(
        Arguments.of("full,recurrent,full", 1),
        Arguments.of("swa:8,full,recurrent", 2),
        Arguments.of("full,swa:8,swa:24/windows", 2));
  }

  private static TinyTransformer model(String mixText) {
    return TestMixes.model(mixText);
  }

  /** What one run matched and used. */
  private static final class Totals {
    long matched;
    long usable;
    long host;
    long l3;
    long prompt;
  }

  private static Totals run(
      String mixText, int hostRatio, int ranks, Map<String, String> extra, Random random)
      throws Exception {
    return run(mixText, hostRatio, ranks, extra, TestSeeds.scaled(8), random);
  }

  private static Totals run(
      String mixText,
      int hostRatio,
      int ranks,
      Map<String, String> extra,
      int conversations,
      Random random)
      throws Exception {
    TinyTransformer model = model(mixText);
    List<List<Turn>> waves = MultiTurn.waves(model, random, conversations, 4);
    ModelConfig m = model.config();
    LayerMix mix = m.layerMix();
    // The same device bytes: pages of fewer blocks are that many more pages.
    int devicePages = DEVICE_PAGES * m.layers() / m.pageLayers();
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(ranks)
            .layout(m.pageLayers(), m.heads(), m.headDim(), Float.BYTES, PAGE)
            .devicePages(devicePages)
            // Ratio 0: one host page, the least the config allows, which none of these prefixes
            // fits in: the device tier alone.
            .hostPages(Math.max(1, devicePages * hostRatio))
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(60));
    extra.forEach(builder::set);
    KvTierConfig config = builder.build();
    EngineSettings settings =
        EngineSettings.DEFAULTS
            .withBatching(4, 16)
            .withQueueCapacity(256)
            .withGroup("hybrid-e2e-" + GROUPS.incrementAndGet());
    long matched = 0;
    long usable = 0;
    long host = 0;
    long l3 = 0;
    long prompt = 0;
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (RankGroupEngine engine =
        GenerationEngines.open(model, config, settings, BackendMetrics.NOOP, RankSlot.Hooks.NONE)) {
      KvTierMeters.bind(registry, engine::stats);
      for (List<Turn> wave : waves) {
        List<Collected> streams = new ArrayList<>();
        for (Turn t : wave) {
          Collected c = new Collected();
          engine.submit(new GenerationEngine.GenerationRequest(t.prompt(), t.expected().length), c);
          streams.add(c);
        }
        for (int i = 0; i < wave.size(); i++) {
          Turn t = wave.get(i);
          Completion c = streams.get(i).get();
          assertThat(c.tokens())
              .as(
                  "%s on %d ranks, host ratio %d: a prompt of %d tokens, %d matched, %d usable: %s",
                  mix,
                  ranks,
                  hostRatio,
                  t.prompt().length,
                  c.matchedTokens(),
                  c.cachedTokens(),
                  Arrays.toString(t.prompt()))
              .containsExactly(t.expected());
          if (m.needsSnapshots()) {
            // Resumed from the deepest state snapshot of the match (HYBRID.md §4, §5).
            assertThat(c.cachedTokens()).isBetween(0, c.matchedTokens());
            assertThat(c.cachedTokens() % PAGE).isZero();
          } else {
            assertThat(c.cachedTokens()).isEqualTo(c.matchedTokens());
          }
          matched += c.matchedTokens();
          usable += c.cachedTokens();
          host += c.hostHitTokens();
          l3 += c.l3HitTokens();
          prompt += t.prompt().length;
        }
      }
      engine.drain();
      String device =
          engine.onEngineThread(
              s -> {
                CacheInvariants.checkIdle(s.cache);
                return s.backends.providers().device().name();
              });
      assertThat(device).isEqualTo(extra.getOrDefault(KvTierKeys.DEVICE, "sim"));
      EngineStats stats = engine.stats();
      System.out.printf(
          "[hybrid] %s%s host ratio %d, %d ranks%s: %d prompt tokens, %d matched (%d from the host,"
              + " %d from L3), %d usable, %d computed%n",
          mix,
          m.windowedSwa() ? " (SWA windows)" : "",
          hostRatio,
          ranks,
          extra.containsKey(KvTierKeys.STORE) ? ", L3" : "",
          prompt,
          matched,
          host,
          l3,
          usable,
          stats.computedTokens());
      assertThat(stats.matchedTokens()).isEqualTo(matched);
      assertThat(stats.usableTokens()).isEqualTo(usable);
      assertThat(stats.computedTokens()).isEqualTo(prompt - usable);
      // What a scrape shows: the hits are the usable tokens, the match beside them.
      assertThat(registry.get("kvtier.prefix.cache.hits").functionCounter().count())
          .isEqualTo(usable);
      assertThat(registry.get("kvtier.prefix.cache.matched").functionCounter().count())
          .isEqualTo(matched);
      assertThat(stats.cacheStats().deviceEvictions()).as("eviction pressure").isPositive();
    }
    // The equality proves something only if the cache matched, from the host where there is one.
    // Selective write-through backs up only the nodes hit often enough, and whether one of those
    // is then evicted from the device and matched again depends on the workload's draw (MRU on 4
    // ranks with SWA windows drew none for seed -4317934944091550803): there the host tier is not
    // bound to be hit, only the device's match is.
    assertThat(matched).isPositive();
    boolean selective =
        WritePolicy.WRITE_THROUGH_SELECTIVE.configName().equals(extra.get(KvTierKeys.WRITE_POLICY));
    if (hostRatio > 0 && !extra.containsKey(KvTierKeys.STORE) && !selective) {
      assertThat(host).isPositive();
    }
    if (m.needsSnapshots()) {
      // The snapshots (interval and tail) make most of a resent history usable again.
      assertThat(usable).as("recurrent-state snapshots make matches usable").isPositive();
      assertThat(usable).isLessThanOrEqualTo(matched);
    } else {
      assertThat(usable).isEqualTo(matched);
    }
    Totals totals = new Totals();
    totals.matched = matched;
    totals.usable = usable;
    totals.host = host;
    totals.l3 = l3;
    totals.prompt = prompt;
    return totals;
  }

  /** One request of the workload and its cache-off output. */
  record Turn(int[] prompt, int[] expected) {}

  /** A seeded multi-turn workload whose expected outputs come from the cache-off reference. */
  static final class MultiTurn {
    private MultiTurn() {}

    /**
     * Waves of turns, each wave one turn of every conversation (sent concurrently), the next wave
     * built on the reference answers of the last. Every conversation opens with one shared system
     * prompt of 32 tokens; each turn resends the history and adds a question of 4 to 20 tokens;
     * after the last wave every conversation resends its first prompt cut to a page multiple
     * (all of it matched but its last page: the engine computes at least the last prompt token).
     */
    static List<List<Turn>> waves(
        TinyTransformer model, Random random, int conversations, int turns) {
      NoCacheRunner reference = new NoCacheRunner(model);
      int vocab = model.config().vocabSize();
      int[] system = TinyPrompts.tokens(random, 32, vocab);
      int[][] history = new int[conversations][];
      int[][] first = new int[conversations][];
      Arrays.fill(history, system);
      List<List<Turn>> waves = new ArrayList<>();
      for (int turn = 0; turn < turns; turn++) {
        List<Turn> wave = new ArrayList<>();
        for (int c = 0; c < conversations; c++) {
          int[] prompt =
              concat(history[c], TinyPrompts.tokens(random, 4 + random.nextInt(17), vocab));
          int[] answer = reference.generate(prompt, 2 + random.nextInt(7));
          if (turn == 0) {
            first[c] = prompt;
          }
          wave.add(new Turn(prompt, answer));
          history[c] = concat(prompt, answer);
        }
        waves.add(wave);
      }
      List<Turn> resend = new ArrayList<>();
      for (int c = 0; c < conversations; c++) {
        int[] prompt = Arrays.copyOf(first[c], first[c].length / PAGE * PAGE);
        resend.add(new Turn(prompt, reference.generate(prompt, 3)));
      }
      // Twice: the first resend may find its pages evicted, the second finds the first's.
      waves.add(resend);
      waves.add(resend);
      return waves;
    }

    private static int[] concat(int[] a, int[] b) {
      int[] out = Arrays.copyOf(a, a.length + b.length);
      System.arraycopy(b, 0, out, a.length, b.length);
      return out;
    }
  }
}
