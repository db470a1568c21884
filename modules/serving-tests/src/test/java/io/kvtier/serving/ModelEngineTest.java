package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.FaultPlan;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.CacheStats;
import io.kvtier.core.cache.MatchResult;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferDirection;
import io.kvtier.testkit.SeedExtension;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The single-rank model engine over the rank engine: reuse, the context limit, failed and stuck
 * copies, and that the check has teeth.
 */
@ExtendWith(SeedExtension.class)
class ModelEngineTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);

  private static KvTierConfig config(int pageSize, int deviceTokens) {
    return SimEngines.config(
        MODEL.config(),
        pageSize,
        deviceTokens,
        2,
        WritePolicy.WRITE_THROUGH,
        EvictionPolicy.LRU,
        Map.of());
  }

  @Test
  void aRepeatedPromptReusesItsPrefixAndGeneratesTheSameTokens(Random random)
      throws InterruptedException {
    int[] prompt = TinyPrompts.tokens(random, 50, 512);
    int[] reference = new NoCacheRunner(MODEL).generate(prompt, 10);
    try (ModelEngine engine = SimEngines.open(MODEL, config(4, 512))) {
      Completion first = engine.generate(prompt, 10);
      Completion second = engine.generate(prompt, 10);

      assertThat(first.tokens()).containsExactly(reference);
      assertThat(first.cachedTokens()).isZero();
      assertThat(second.tokens()).containsExactly(reference);
      // All but the last prompt token, rounded down to a page: 49 -> 48.
      assertThat(second.cachedTokens()).isEqualTo(48);
      assertThat(second.deviceHitTokens()).isEqualTo(48);
      assertThat(engine.stats().requests()).isEqualTo(2);
      assertThat(engine.stats().computedTokens()).isEqualTo(50 + 2);
    }
  }

  @Test
  void theGeneratedTokensAreCachedForTheNextTurn(Random random) throws InterruptedException {
    int[] prompt = TinyPrompts.tokens(random, 30, 512);
    try (ModelEngine engine = SimEngines.open(MODEL, config(1, 512))) {
      int[] out = engine.generate(prompt, 8).tokens();
      int[] turn = Arrays.copyOf(prompt, prompt.length + out.length + 1);
      System.arraycopy(out, 0, turn, prompt.length, out.length);
      turn[turn.length - 1] = 3;

      Completion next = engine.generate(turn, 4);

      // The prompt and 7 of the 8 outputs had their KV computed: the last output never did.
      assertThat(next.cachedTokens()).isEqualTo(30 + 7);
      assertThat(next.tokens()).containsExactly(new NoCacheRunner(MODEL).generate(turn, 4));
    }
  }

  /** A corrupted cached page must change the output, or the equality tests would prove nothing. */
  @Test
  void corruptingACachedPageChangesTheOutput(Random random) throws InterruptedException {
    int[] prompt = TinyPrompts.tokens(random, 64, 512);
    int[] reference = new NoCacheRunner(MODEL).generate(prompt, 12);
    try (ModelEngine engine = SimEngines.open(MODEL, config(16, 512))) {
      assertThat(engine.generate(prompt, 12).tokens()).containsExactly(reference);
      engine.drain();

      float[] noise = new float[16 * MODEL.config().modelDim()];
      for (int i = 0; i < noise.length; i++) {
        noise[i] = random.nextFloat() * 8 - 4;
      }
      engine.onEngineThread(
          s -> {
            MatchResult match = s.cache.match(0, prompt);
            assertThat(match.deviceSlots()).isNotEmpty();
            for (int layer = 0; layer < MODEL.config().layers(); layer++) {
              s.backends
                  .device()
                  .write(match.deviceSlots()[0], layer, 0, MemorySegment.ofArray(noise));
            }
            return null;
          });

      Completion corrupted = engine.generate(prompt, 12);
      assertThat(corrupted.cachedTokens()).isPositive();
      assertThat(corrupted.tokens()).isNotEqualTo(reference);
    }
  }

  private static void checkInvariants(ModelEngine engine, boolean idle)
      throws InterruptedException {
    engine.onEngineThread(
        s -> {
          if (idle) {
            CacheInvariants.checkIdle(s.cache);
          } else {
            CacheInvariants.check(s.cache);
          }
          return null;
        });
  }

  /** An engine whose copies go through a fault-injecting transfer engine. */
  private static ModelEngine withFaultyTransfers(
      KvTierConfig config, AtomicReference<FaultyTransferEngine> transfers) {
    return ModelEngine.open(
        MODEL,
        config,
        BackendMetrics.NOOP,
        store -> store,
        t -> {
          FaultyTransferEngine faulty =
              new FaultyTransferEngine(t, FaultPlan.none(), TimeSource.SYSTEM);
          transfers.set(faulty);
          return faulty;
        });
  }

  /**
   * The engine's rule for a failed load-back (the default policy): the prefix leaves the cache,
   * the request goes back to the queue and is recomputed, so generate returns the uncached
   * output; the prompt sent again finds what the recompute cached.
   */
  @Test
  void aFailedLoadBackIsRecomputedAndGivesTheUncachedTokens(Random random)
      throws InterruptedException {
    int[] prompt = TinyPrompts.tokens(random, 40, 512);
    int[] reference = new NoCacheRunner(MODEL).generate(prompt, 4);
    AtomicReference<FaultyTransferEngine> transfers = new AtomicReference<>();
    try (ModelEngine engine = withFaultyTransfers(config(4, 64), transfers)) {
      engine.generate(prompt, 4);
      engine.drain();
      // Another prompt of the device pool's size evicts the first one's pages to the host.
      engine.generate(TinyPrompts.tokens(random, 60, 512), 4);
      engine.drain();
      transfers.get().failNext(TransferDirection.HOST_TO_DEVICE);

      Completion recomputed = engine.generate(prompt, 4);

      assertThat(recomputed.tokens()).containsExactly(reference);
      assertThat(recomputed.hostHitTokens()).isZero();
      assertThat(engine.stats().loadFailures()).isZero();
      assertThat(engine.engineStats().loadFailureRecomputes()).isEqualTo(1);
      engine.drain();
      checkInvariants(engine, true);

      Completion again = engine.generate(prompt, 4);
      assertThat(again.tokens()).containsExactly(reference);
      assertThat(again.deviceHitTokens()).isPositive();
      engine.drain();
      checkInvariants(engine, true);
    }
  }

  /**
   * A copy that never completes aborts the request after the stall bound instead of hanging, an
   * interrupt aborts it at once, and the engine serves the prompt once the copy is let go.
   */
  @Test
  void aStuckCopyOrAnInterruptAbortsTheRequestInsteadOfHanging(Random random)
      throws InterruptedException {
    int[] prompt = TinyPrompts.tokens(random, 40, 512);
    AtomicReference<FaultyTransferEngine> transfers = new AtomicReference<>();
    try (ModelEngine engine = withFaultyTransfers(config(4, 64), transfers)) {
      engine.generate(prompt, 4);
      engine.drain();
      engine.generate(TinyPrompts.tokens(random, 60, 512), 4);
      engine.drain();
      engine.stallTimeout(Duration.ofMillis(300));
      transfers.get().stall(TransferDirection.HOST_TO_DEVICE);

      assertThatThrownBy(() -> engine.generate(prompt, 4))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("made progress")
          .hasMessageContaining("aborted");
      assertThat(engine.engineStats().aborted()).isEqualTo(1);
      // An interrupt while waiting for the copy aborts the request the same way.
      engine.stallTimeout(Duration.ofMinutes(5));
      Thread.currentThread().interrupt();
      assertThatThrownBy(() -> engine.generate(prompt, 4)).isInstanceOf(InterruptedException.class);
      assertThat(engine.engineStats().aborted()).isEqualTo(2);
      transfers.get().release(TransferDirection.HOST_TO_DEVICE);
      engine.drain();
      checkInvariants(engine, true);
      assertThat(engine.generate(prompt, 4).tokens())
          .containsExactly(new NoCacheRunner(MODEL).generate(prompt, 4));
    }
  }

  /** Closing while a copy never finishes returns after the stall bound instead of hanging. */
  @Test
  void closingWithAStuckCopyReturnsInsteadOfHanging(Random random) throws InterruptedException {
    int[] prompt = TinyPrompts.tokens(random, 40, 512);
    AtomicReference<FaultyTransferEngine> transfers = new AtomicReference<>();
    ModelEngine engine = withFaultyTransfers(config(4, 64), transfers);
    try {
      engine.stallTimeout(Duration.ofMillis(300));
      transfers.get().stall(TransferDirection.DEVICE_TO_HOST);
      // Write-through: the prompt's pages are backed up to the host, a copy that never ends.
      assertThat(engine.generate(prompt, 2).tokens()).hasSize(2);
      int outstanding = engine.onEngineThread(s -> s.cache.outstandingOperations());
      assertThat(outstanding).as("copies outstanding").isPositive();
      engine.close();
      assertThatThrownBy(() -> engine.generate(prompt, 1))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("without draining");
    } finally {
      transfers.get().release(TransferDirection.DEVICE_TO_HOST);
      engine.close();
    }
  }

  /**
   * Failed copies (backups rolled back, failed load-backs) never change an output, nor fail a
   * request.
   */
  @Test
  void failingCopiesNeverChangeAnOutput(Random random) throws InterruptedException {
    List<TinyPrompts.Prompt> prompts =
        TinyPrompts.sharedPrefixes(
            random, 40, 4, 512, new int[] {20, 80}, new int[] {1, 20}, new int[] {1, 6});
    KvTierConfig config =
        SimEngines.config(
            MODEL.config(),
            4,
            256,
            3,
            WritePolicy.WRITE_THROUGH,
            EvictionPolicy.LRU,
            Map.of("sim.failure-probability", "0.3", "sim.seed", Long.toString(random.nextLong())));
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    try (ModelEngine engine = SimEngines.open(MODEL, config)) {
      for (TinyPrompts.Prompt p : prompts) {
        // The engine's rule: a request whose load-back failed is recomputed, never failed.
        assertThat(engine.generate(p.tokens(), p.maxTokens()).tokens())
            .containsExactly(reference.generate(p.tokens(), p.maxTokens()));
        engine.onEngineThread(
            s -> {
              CacheInvariants.check(s.cache);
              return null;
            });
      }
      engine.drain();
      engine.onEngineThread(
          s -> {
            CacheInvariants.checkIdle(s.cache);
            return null;
          });
      CacheStats stats = engine.stats().cacheStats();
      assertThat(stats.backupsFailed() + stats.loadsFailed()).as("copies that failed").isPositive();
      assertThat(engine.stats().requests()).isEqualTo(prompts.size());
      assertThat(engine.stats().loadFailures()).isZero();
      assertThat(engine.engineStats().loadFailureRecomputes())
          .as("requests sent back by a failed load-back")
          .isEqualTo(stats.loadsFailed());
    }
  }

  @Test
  void aRequestLongerThanTheDevicePoolIsRejectedUpFront() throws InterruptedException {
    try (ModelEngine engine = SimEngines.open(MODEL, config(4, 64))) {
      assertThat(engine.contextLimit()).isEqualTo(64);
      assertThatThrownBy(() -> engine.generate(new int[60], 5))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("exceeds the context limit of 64");
      assertThat(engine.generate(new int[60], 4).tokens()).hasSize(4);
    }
  }

  @Test
  void aConfigWithAnotherLayoutIsRejectedNamingTheKeys() {
    KvTierConfig wrong =
        KvTierConfig.builder().device("sim").host("sim").devicePages(16).hostPages(32).build();
    assertThatThrownBy(() -> SimEngines.open(MODEL, wrong))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.layers=2")
        .hasMessageContaining("kvtier.dtype-bytes=4");
  }
}
