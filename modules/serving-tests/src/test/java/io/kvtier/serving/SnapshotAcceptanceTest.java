package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.metrics.KvTierMeters;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.spi.BackendMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 22's failure modes of recurrent-state caching, end to end through the tiny model: (a) a
 * host-tier hit on a hybrid model resumes from the right state, and a runner that leaves its
 * snapshots stale answers wrong, so the equality is what catches it; (b) device eviction of a
 * committed node keeps the host snapshot, so the next turn resumes from the host; (c) a
 * conversation whose interval snapshots fall inside request-unique tokens resumes thanks to the
 * tail snapshot, and without it (the field's rule) its low usable rate shows in the engine's
 * statistics and the metrics, matched beside usable. Each runs on a recurrent mix and on an SWA mix
 * whose KV the cache keeps as windows in the snapshots ({@code /windows}, docs/HYBRID.md §4),
 * where a window plays the recurrent state's part.
 */
@Timeout(120)
class SnapshotAcceptanceTest {
  private static final int PAGE = 4;
  private static final AtomicInteger GROUPS = new AtomicInteger();

  private static TinyTransformer model(String mixText) {
    return TestMixes.model(mixText);
  }

  private static KvTierConfig config(TinyTransformer model, int ranks, int devicePages) {
    ModelConfig m = model.config();
    return KvTierConfig.builder()
        .device("sim")
        .host("sim")
        .collective("local")
        .ranks(ranks)
        .layout(m.pageLayers(), m.heads(), m.headDim(), Float.BYTES, PAGE)
        .devicePages(devicePages)
        .hostPages(devicePages * 8)
        .writePolicy(WritePolicy.WRITE_THROUGH)
        .evictionPolicy(EvictionPolicy.LRU)
        .vocabSize(m.vocabSize())
        .snapshotIntervalPages(4)
        .collectiveTimeout(Duration.ofSeconds(60))
        .build();
  }

  private static RankGroupEngine open(TinyTransformer model, KvTierConfig config, RankSlot.Hooks h)
      throws Exception {
    EngineSettings settings =
        EngineSettings.DEFAULTS
            .withBatching(4, 16)
            .withQueueCapacity(64)
            .withGroup("snapshot-acceptance-" + GROUPS.incrementAndGet());
    return GenerationEngines.open(model, config, settings, BackendMetrics.NOOP, h);
  }

  private static Completion complete(RankGroupEngine engine, int[] prompt, int outputs)
      throws Exception {
    Collected c = new Collected();
    engine.submit(new GenerationEngine.GenerationRequest(prompt, outputs), c);
    return c.get();
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** What the host-tier scenario saw: every turn-2 answer and whether it equalled the reference. */
  private record HostRun(List<Completion> second, int wrong) {}

  /**
   * Eight conversations of one turn each fill a device pool of 48 pages many times over, so the
   * first turns' nodes are demoted to the host; then each conversation's second turn resends its
   * history. The reference answers come from the cache-off model.
   */
  private static HostRun hostRun(String mix, int ranks, RankSlot.Hooks hooks) throws Exception {
    TinyTransformer model = model(mix);
    NoCacheRunner reference = new NoCacheRunner(model);
    Random random = new Random(22);
    int vocab = model.config().vocabSize();
    List<int[]> histories = new ArrayList<>();
    List<Completion> second = new ArrayList<>();
    int wrong = 0;
    try (RankGroupEngine engine = open(model, config(model, ranks, 48), hooks)) {
      for (int c = 0; c < 8; c++) {
        int[] prompt = TinyPrompts.tokens(random, 30 + random.nextInt(20), vocab);
        int[] answer = reference.generate(prompt, 4);
        Completion first = complete(engine, prompt, 4);
        wrong += Arrays.equals(first.tokens(), answer) ? 0 : 1;
        histories.add(concat(prompt, answer));
      }
      for (int[] history : histories) {
        int[] prompt = concat(history, TinyPrompts.tokens(random, 6, vocab));
        int[] answer = reference.generate(prompt, 4);
        Completion c = complete(engine, prompt, 4);
        wrong += Arrays.equals(c.tokens(), answer) ? 0 : 1;
        second.add(c);
      }
      engine.drain();
      engine.onEngineThread(
          s -> {
            CacheInvariants.checkIdle(s.cache);
            return null;
          });
    }
    return new HostRun(second, wrong);
  }

  @ParameterizedTest(name = "{0}, {1} ranks")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
      full,recurrent,full     | 1
      full,recurrent,full     | 2
      full,swa:6,full/windows | 1
      full,swa:6,full/windows | 2
      """)
  void aHostTierHitResumesFromTheHostSnapshotAndAnswersLikeTheReference(String mix, int ranks)
      throws Exception {
    HostRun run = hostRun(mix, ranks, RankSlot.Hooks.NONE);

    assertThat(run.wrong()).as("turns that differ from the cache-off reference").isZero();
    // (b): the first turns were demoted by the device pressure, and their host snapshots make
    // the second turns resume beyond what the device still holds: from the host.
    long fromHost =
        run.second().stream()
            .filter(c -> c.hostHitTokens() > 0 && c.cachedTokens() > c.deviceHitTokens())
            .count();
    assertThat(fromHost).as("second turns resumed from a host snapshot").isPositive();
    for (Completion c : run.second()) {
      assertThat(c.cachedTokens()).isPositive().isLessThanOrEqualTo(c.matchedTokens());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"full,recurrent,full", "full,swa:6,full/windows"})
  void aRunnerThatLeavesItsSnapshotsStaleAnswersWrongAndTheEqualityCatchesIt(String mix)
      throws Exception {
    // The mutation: snapshots are announced (the cache adopts their slots) but never written,
    // so a later request loads whatever the slots held before: a stale or foreign state.
    RankSlot.Hooks stale =
        RankSlot.Hooks.NONE.withRunner((rank, runner) -> new StaleSnapshots(runner));
    HostRun run = hostRun(mix, 1, stale);

    assertThat(run.wrong()).as("turns answered from a stale state").isPositive();
  }

  /** Passes every step on without its snapshots: the runner writes none. */
  private static final class StaleSnapshots implements ModelRunner {
    private final ModelRunner runner;

    StaleSnapshots(ModelRunner runner) {
      this.runner = runner;
    }

    private static ModelStep strip(ModelStep s) {
      return new ModelStep(
          s.requestId(),
          s.namespace(),
          s.tokens(),
          s.from(),
          s.to(),
          s.pageTable(),
          s.resumeSlots(),
          List.of());
    }

    @Override
    public int layers() {
      return runner.layers();
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      runner.writeLayer(strip(step), layer);
    }

    @Override
    public int nextToken(ModelStep step) {
      return runner.nextToken(strip(step));
    }

    @Override
    public int verifyPrefix(ModelStep step) {
      return runner.verifyPrefix(step);
    }

    @Override
    public int snapshotSlots() {
      return runner.snapshotSlots();
    }

    @Override
    public int streamedBlock(int layer) {
      return runner.streamedBlock(layer);
    }

    @Override
    public int pageBlocks() {
      return runner.pageBlocks();
    }

    @Override
    public void released(long requestId) {
      runner.released(requestId);
    }
  }

  /** Matched and usable tokens of the second turns, and their sums over the run. */
  private record Rates(long matched, long usable, double scrapedHits, double scrapedMatched) {}

  /**
   * Conversations of 3 turns whose histories stay below the interval of 8 pages (32 tokens) and
   * never reach one: every interval snapshot would lie in tokens no other request sends.
   */
  private static Rates uniqueTokensRun(String mix, boolean tail) throws Exception {
    TinyTransformer model = model(mix);
    NoCacheRunner reference = new NoCacheRunner(model);
    Random random = new Random(7);
    int vocab = model.config().vocabSize();
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim")
            .collective("local")
            .layout(
                model.config().pageLayers(),
                model.config().heads(),
                model.config().headDim(),
                Float.BYTES,
                PAGE)
            .devicePages(256)
            .vocabSize(vocab)
            .snapshotIntervalPages(8)
            .build();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    long matched = 0;
    long usable = 0;
    try (RankGroupEngine engine = open(model, config, RankSlot.Hooks.NONE)) {
      KvTierMeters.bind(registry, engine::stats);
      if (!tail) {
        engine.onEngineThread(
            s -> {
              CacheTestHooks.takeIntervalSnapshotsOnly(s.cache);
              return null;
            });
      }
      for (int c = 0; c < 6; c++) {
        int[] history = TinyPrompts.tokens(random, 6 + random.nextInt(4), vocab);
        for (int turn = 0; turn < 3; turn++) {
          int[] prompt = concat(history, TinyPrompts.tokens(random, 3, vocab));
          int[] answer = reference.generate(prompt, 2);
          Completion done = complete(engine, prompt, 2);
          assertThat(done.tokens()).containsExactly(answer);
          history = concat(prompt, answer);
        }
      }
      engine.drain();
      EngineStats stats = engine.stats();
      matched = stats.matchedTokens();
      usable = stats.usableTokens();
      return new Rates(
          matched,
          usable,
          registry.get("kvtier.prefix.cache.hits").functionCounter().count(),
          registry.get("kvtier.prefix.cache.matched").functionCounter().count());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"full,recurrent,full", "full,swa:6,full/windows"})
  void snapshotsInsideRequestUniqueTokensShowALowUsableRateAndTheTailFixesIt(String mix)
      throws Exception {
    Rates withTail = uniqueTokensRun(mix, true);
    Rates intervalOnly = uniqueTokensRun(mix, false);

    assertThat(withTail.matched()).isPositive();
    assertThat(withTail.usable()).isEqualTo(withTail.matched());
    // The field's rule: the same matches, no snapshot to resume from, and the figures say so.
    assertThat(intervalOnly.matched()).isEqualTo(withTail.matched());
    assertThat(intervalOnly.usable()).isZero();
    assertThat(intervalOnly.scrapedMatched()).isEqualTo((double) intervalOnly.matched());
    assertThat(intervalOnly.scrapedHits()).isZero();
    assertThat(withTail.scrapedHits()).isEqualTo((double) withTail.usable());
  }
}
