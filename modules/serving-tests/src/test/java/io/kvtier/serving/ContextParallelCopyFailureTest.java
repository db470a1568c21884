package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.FaultPlan;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.llama.LlamaServingModel;
import io.kvtier.model.llama.LogitsListener;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferDirection;
import io.kvtier.testkit.SharedFiles;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * stories260K context parallel ({@code kvtier.parallel=cp}) on 2 and 4 rank threads, its pools
 * too small for the requests (evictions to the host and load-backs), and the next host-to-device
 * copy of one rank failing: every rank's logits are bit for bit those of the cache-off cp run,
 * and the answers those of one rank. The ranks agree that the load failed, as under tp, and the
 * prefix is recomputed.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ContextParallelCopyFailureTest {
  private static final int ANSWER = 6;

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void aFailedCopyOnOneRankLeavesTheLogitsThoseOfTheCacheOffRun(int ranks) throws Exception {
    var path = SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    Random random = new Random(5);
    int[] first = tokens(random, 60);
    int[] second = tokens(random, 120);
    List<int[]> prompts = List.of(first, second, first);
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      Recorder reference = new Recorder();
      List<int[]> answers;
      try (RankGroupEngine engine =
          open(model, reference, config(model, 1, Parallelism.TP), false, RankSlot.Hooks.NONE)) {
        answers = generate(engine, prompts);
      }
      Recorder off = new Recorder();
      try (RankGroupEngine engine =
          open(model, off, config(model, ranks, Parallelism.cp(1)), false, RankSlot.Hooks.NONE)) {
        assertThat(generate(engine, prompts)).as("cp cache off").containsExactlyElementsOf(answers);
      }
      Recorder on = new Recorder();
      List<FaultyTransferEngine> transfers = new CopyOnWriteArrayList<>();
      RankSlot.Hooks hooks =
          RankSlot.Hooks.NONE.withTransfers(
              t -> {
                FaultyTransferEngine faulty =
                    new FaultyTransferEngine(t, FaultPlan.none(), TimeSource.SYSTEM);
                transfers.add(faulty);
                return faulty;
              });
      try (RankGroupEngine engine =
          open(model, on, config(model, ranks, Parallelism.cp(1)), true, hooks)) {
        List<int[]> got = generate(engine, prompts.subList(0, 2));
        engine.drain();
        assertThat(transfers).hasSize(ranks);
        // One rank's copy of the first prompt's pages back from the host fails.
        transfers.get(ranks - 1).failNext(TransferDirection.HOST_TO_DEVICE);
        got.addAll(generate(engine, prompts.subList(2, 3)));
        assertThat(got).as("cp cache on").containsExactlyElementsOf(answers);
        assertThat(transfers.get(ranks - 1).count(FaultyTransferEngine.Fault.FAIL)).isEqualTo(1);
      }
      for (int r = 0; r < ranks; r++) {
        assertThat(on.logits(r)).hasSameSizeAs(off.logits(0));
        for (int i = 0; i < off.logits(0).size(); i++) {
          assertThat(on.logits(r).get(i))
              .as("rank %d's logit bits of generated token %d", r, i)
              .containsExactly(off.logits(0).get(i));
        }
      }
    }
  }

  private static KvTierConfig config(LlamaServingModel model, int ranks, Parallelism parallel) {
    // 40 device pages of 4 tokens: the 120-token prompt pushes the 60-token one to the host.
    return KvTierConfig.builder()
        .device("sim")
        .host("sim")
        .collective("local")
        .ranks(ranks)
        .parallelism(parallel)
        .layout(model.layers(), model.kvHeads(), model.headSize(), Float.BYTES, 4)
        .devicePages(40)
        .hostPages(160)
        .writePolicy(WritePolicy.WRITE_THROUGH)
        .evictionPolicy(EvictionPolicy.LRU)
        .vocabSize(model.vocabularySize())
        .collectiveTimeout(Duration.ofSeconds(60))
        .build();
  }

  private static RankGroupEngine open(
      LlamaServingModel model,
      Recorder recorder,
      KvTierConfig config,
      boolean cache,
      RankSlot.Hooks hooks) {
    return GenerationEngines.open(
        model.withLogitsListener(recorder),
        config,
        EngineSettings.DEFAULTS
            .withGroup("cp-copy-failure-" + System.nanoTime())
            .withPrefixCaching(cache),
        BackendMetrics.NOOP,
        hooks);
  }

  private static List<int[]> generate(GenerationEngine engine, List<int[]> prompts)
      throws Exception {
    List<int[]> answers = new ArrayList<>();
    for (int[] prompt : prompts) {
      CompletableFuture<Completion> done = new CompletableFuture<>();
      engine.submit(
          new GenerationEngine.GenerationRequest(prompt, ANSWER),
          new GenerationEngine.TokenStream() {
            @Override
            public void token(int token) {}

            @Override
            public void finished(Completion completion) {
              done.complete(completion);
            }

            @Override
            public void failed(Throwable cause) {
              done.completeExceptionally(cause);
            }
          });
      answers.add(done.get(1, TimeUnit.MINUTES).tokens());
    }
    return answers;
  }

  private static int[] tokens(Random random, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = 3 + random.nextInt(500);
    }
    return t;
  }

  /** Each rank's logits' bits, in the order the rank generated the tokens. */
  private static final class Recorder implements LogitsListener {
    private final Map<Integer, List<int[]>> byRank = new ConcurrentHashMap<>();

    @Override
    public void logits(int rank, long requestId, int position, float[] logits) {
      int[] bits = new int[logits.length];
      for (int i = 0; i < bits.length; i++) {
        bits[i] = Float.floatToRawIntBits(logits[i]);
      }
      byRank.computeIfAbsent(rank, r -> new CopyOnWriteArrayList<>()).add(bits);
    }

    List<int[]> logits(int rank) {
      return byRank.getOrDefault(rank, List.of());
    }
  }
}
