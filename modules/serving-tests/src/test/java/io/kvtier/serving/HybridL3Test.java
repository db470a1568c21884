package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.L3Stats;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.HybridEndToEndTest.MultiTurn;
import io.kvtier.serving.HybridEndToEndTest.Turn;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Recurrent-state snapshots through the L3 tier, end to end (HYBRID.md §6): a hybrid tiny model
 * with a recurrent layer on 1 and 4 ranks, an L3 {@code memory} store under a host tier twice the
 * device pool, so that prefixes leave the host and come back only from the store. The
 * seeded multi-turn workload of {@link HybridEndToEndTest} answers every turn with the cache-off
 * reference's tokens, and some turns resume from a snapshot the store gave back: their usable
 * prefix reaches past what the device and host tiers matched. Without snapshots in L3 no usable
 * token can come from there (a recurrent model resumes only at a snapshot).
 */
@ExtendWith(SeedExtension.class)
class HybridL3Test {
  private static final int PAGE = 4;
  private static final int DEVICE_PAGES = 64;
  private static final AtomicInteger GROUPS = new AtomicInteger();

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (String mix : List.of("full,recurrent,full", "swa:8,full,recurrent")) {
      for (int ranks : new int[] {1, 4}) {
        out.add(Arguments.of(mix, ranks));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0}, {1} ranks")
  @MethodSource("cases")
  @Timeout(180)
  void turnsResumeFromSnapshotsTheStoreGaveBackWithTheReferenceOutput(
      String mixText, int ranks, Random random) throws Exception {
    TinyTransformer model =
        new TinyTransformer(
            ModelConfig.DEFAULTS.withLayers(3).withLayerMix(LayerMix.parse(mixText, "mix")));
    // Which turns find their prefix only in the store depends on how the concurrent waves
    // interleave with the copies, so the count of L3 hits varies from run to run. A host tier
    // no larger than the device pool holds only copies of device pages under write-through,
    // which a prefetch may not evict (L3Stats.pagesNoHostRoom): 8 conversations then gave 1 to
    // 6 turns with usable L3 tokens and a clean-clone CI run once none, 16 gave 9 to 13. Twice
    // the device pool leaves a prefetch room: 16 conversations gave 10 to 26 such turns.
    List<List<Turn>> waves = MultiTurn.waves(model, random, TestSeeds.scaled(16), 4);
    ModelConfig m = model.config();
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .collective("local")
            .ranks(ranks)
            .layout(m.layers(), m.heads(), m.headDim(), Float.BYTES, PAGE)
            .devicePages(DEVICE_PAGES)
            .hostPages(2 * DEVICE_PAGES)
            .writePolicy(WritePolicy.WRITE_THROUGH)
            .evictionPolicy(EvictionPolicy.LRU)
            .vocabSize(m.vocabSize())
            .collectiveTimeout(Duration.ofSeconds(60));
    SimEngines.l3("memory", null, L3PrefetchPolicy.WAIT_COMPLETE, PAGE).forEach(builder::set);
    builder.set(KvTierKeys.L3_MODEL_ID, m.l3ModelId());
    KvTierConfig config = builder.build();
    EngineSettings settings =
        EngineSettings.DEFAULTS
            .withBatching(4, 16)
            .withQueueCapacity(256)
            .withGroup("hybrid-l3-" + GROUPS.incrementAndGet());
    long matched = 0;
    long usable = 0;
    long l3Matched = 0;
    long usableFromL3 = 0;
    int turnsFromL3 = 0;
    try (RankGroupEngine engine =
        GenerationEngines.open(model, config, settings, BackendMetrics.NOOP, RankSlot.Hooks.NONE)) {
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
                  "%s on %d ranks: a prompt of %d tokens, %d matched (%d from L3), %d usable: %s",
                  mixText,
                  ranks,
                  t.prompt().length,
                  c.matchedTokens(),
                  c.l3HitTokens(),
                  c.cachedTokens(),
                  Arrays.toString(t.prompt()))
              .containsExactly(t.expected());
          assertThat(c.cachedTokens()).isBetween(0, c.matchedTokens());
          assertThat(c.cachedTokens() % PAGE).isZero();
          matched += c.matchedTokens();
          usable += c.cachedTokens();
          l3Matched += c.l3HitTokens();
          int fromL3 = c.cachedTokens() - c.deviceHitTokens() - c.hostHitTokens();
          if (fromL3 > 0) {
            usableFromL3 += fromL3;
            turnsFromL3++;
          }
        }
      }
      engine.drain();
      engine.onEngineThread(
          s -> {
            CacheInvariants.checkIdle(s.cache);
            return null;
          });
      L3Stats l3 = engine.stats().l3Stats();
      System.out.printf(
          "[hybrid-l3] %s, %d ranks: %d matched, %d usable; %d matched from L3, %d usable from L3"
              + " in %d turns; L3 snapshots written %d, inserted %d%n",
          mixText,
          ranks,
          matched,
          usable,
          l3Matched,
          usableFromL3,
          turnsFromL3,
          l3.snapshotsWritten(),
          l3.snapshotsInserted());
      assertThat(l3.snapshotsWritten()).as("snapshots written to L3").isPositive();
      assertThat(l3.snapshotsInserted()).as("snapshots prefetched from L3").isPositive();
    }
    assertThat(l3Matched).as("L3 hits").isPositive();
    assertThat(usableFromL3).as("usable tokens past the device and host match").isPositive();
  }
}
