package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.backend.sim.SimTransferEngine;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.CopyCheck;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Verified restores (docs/CACHE.md): a host page whose bytes change at rest (a bit flipped by the
 * sim backend's {@code flipNext}, on every rank) fails its load-back by its CRC32C, is counted,
 * and leaves the cache; the request goes back to the queue, is recomputed, and gives the uncached
 * model's tokens. A broken variant whose transfer engine drops the check shows that the flipped page is
 * otherwise used: the engine's recompute check finds its K/V wrong.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class VerifiedRestoreTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final int[] FIRST = IntStream.range(0, 40).map(i -> 1 + (i * 37) % 500).toArray();
  private static final int[] SECOND = IntStream.range(0, 60).map(i -> 2 + (i * 53) % 500).toArray();

  @Test
  void aPageFlippedOnTheHostFailsItsLoadByChecksumAndTheRequestIsRecomputedRight()
      throws Exception {
    List<SimTransferEngine> transfers = new CopyOnWriteArrayList<>();
    int[] reference = new NoCacheRunner(MODEL).generate(FIRST, 4);
    try (ModelEngine engine =
        open(
            t -> {
              transfers.add((SimTransferEngine) t);
              return t;
            })) {
      pushFirstToTheHost(engine);
      transfers.forEach(t -> t.faults().flipNext(1));

      Completion recomputed = engine.generate(FIRST, 4);

      assertThat(recomputed.tokens()).containsExactly(reference);
      assertThat(recomputed.hostHitTokens()).as("the flipped prefix left the host tier").isZero();
      engine.drain();
      assertThat(engine.stats().hostChecksumMismatches()).isEqualTo(1);
      assertThat(engine.stats().checkedHostBlocks()).isPositive();
      RankEngineStats stats = engine.engineStats();
      assertThat(stats.loadFailureRecomputes()).isEqualTo(1);
      assertThat(stats.loadFailureLostTokens()).isPositive();
      assertThat(stats.loadFailureAborts()).isZero();
      assertThat(stats.kvMismatches()).isZero();

      Completion again = engine.generate(FIRST, 4);

      assertThat(again.tokens()).containsExactly(reference);
      assertThat(again.deviceHitTokens()).as("the recomputed prefix is cached again").isPositive();
    }
  }

  @Test
  void withTheCheckDroppedTheFlippedPageIsLoadedAndItsKvIsWrong() throws Exception {
    List<SimTransferEngine> transfers = new CopyOnWriteArrayList<>();
    try (ModelEngine engine =
        open(
            t -> {
              transfers.add((SimTransferEngine) t);
              return new Unchecked(t);
            })) {
      pushFirstToTheHost(engine);
      transfers.forEach(t -> t.faults().flipNext(1));

      Completion hit = engine.generate(FIRST, 4);

      assertThat(hit.hostHitTokens()).isPositive();
      assertThat(engine.engineStats().kvMismatches())
          .as("pages the recompute check found wrong")
          .isPositive();
      assertThat(engine.stats().hostChecksumMismatches()).isZero();
    }
  }

  /** A 40-token prompt, then a 60-token one that pushes it from the 64-token device to the host. */
  private static void pushFirstToTheHost(ModelEngine engine) throws InterruptedException {
    engine.generate(FIRST, 4);
    engine.generate(SECOND, 4);
    engine.drain();
  }

  private static ModelEngine open(UnaryOperator<TransferEngine> wrap) {
    KvTierConfig config =
        KvTierConfig.builder()
            .properties(
                SimEngines.config(
                        MODEL.config(),
                        4,
                        64,
                        2,
                        WritePolicy.WRITE_THROUGH,
                        EvictionPolicy.LRU,
                        Map.of())
                    .toProperties())
            .set(KvTierKeys.RANKS, "2")
            .build();
    return ModelEngine.open(MODEL, config, BackendMetrics.NOOP, UnaryOperator.identity(), wrap);
  }

  /** The broken variant: copies as asked, and never runs the cache's checks. */
  private record Unchecked(TransferEngine delegate) implements TransferEngine {
    @Override
    public TransferHandle submit(TransferBatch batch) {
      return delegate.submit(batch);
    }

    @Override
    public TransferHandle submit(TransferBatch batch, CopyCheck check) {
      return delegate.submit(batch);
    }

    @Override
    public int inFlight() {
      return delegate.inFlight();
    }

    @Override
    public void close() {
      delegate.close();
    }
  }
}
