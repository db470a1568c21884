package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.gguf.GgufFile;
import io.kvtier.serving.Completion;
import io.kvtier.serving.ModelEngine;
import io.kvtier.serving.ModelProvider;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SharedFiles;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * stories260K served by the engine as model {@code gguf} (sim pools, its KV in kvtier's pages):
 * greedy from BOS, 80 tokens, equals {@link LlamaModel}'s direct greedy decoding and starts as
 * llama.cpp's does, on 1 rank (the same logits, so the same tokens) and on 2 and 4 ranks (its 4 KV
 * heads and 172 feed-forward rows split; sums in another order, the same tokens); and context
 * parallel ({@link Parallelism}) on 2, 4 and 8 ranks, past its 4 KV heads, one position or a
 * block of 4 per turn (attention merged through its log-sum-exp, the same tokens).
 */
class StoriesServedTest {

  @ParameterizedTest(name = "{0}, {1} ranks")
  @CsvSource({"tp,1", "tp,2", "tp,4", "cp1,2", "cp1,4", "cp1,8", "cp4,2", "cp2,4"})
  @Timeout(120)
  void greedyFromBosThroughTheEngineEqualsTheDirectGreedy(String parallel, int ranks)
      throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    int[] direct = new int[80];
    float[][] directLogits = new float[80][];
    int bos;
    try (GgufFile file = GgufFile.open(path)) {
      bos = file.getInt("tokenizer.ggml.bos_token_id");
      LlamaModel direct1 = LlamaModel.of(file);
      KvStore kv = ArrayKvStore.forModel(direct1);
      int token = bos;
      for (int i = 0; i < direct.length; i++) {
        directLogits[i] = direct1.decode(token, i, kv);
        token = StoriesGreedyTest.argmax(directLogits[i]);
        direct[i] = token;
      }
    }
    float[][] servedLogits = new float[80][];
    LogitsListener rank0 =
        (rank, id, position, logits) -> {
          if (rank == 0) {
            servedLogits[position] = logits.clone();
          }
        };
    ServingModel opened = ModelProvider.open("gguf", Map.of("file", path.toString()));
    try (LlamaServingModel model = (LlamaServingModel) opened) {
      assertThat(model.name()).isNotBlank();
      assertThat(model.vocabularySize()).isEqualTo(512);
      assertThat(model.maxContext()).isEqualTo(512);
      KvTierConfig config =
          KvTierConfig.builder()
              .properties(config(model, ranks, 16, 64, WritePolicy.WRITE_THROUGH).toProperties())
              .parallelism(ServedExactnessTest.parallelism(parallel))
              .build();
      int[] served;
      try (ModelEngine engine =
          ModelEngine.open(model.withLogitsListener(rank0), config, BackendMetrics.NOOP)) {
        long started = System.nanoTime();
        Completion c = engine.generate(new int[] {bos}, 80);
        long elapsed = System.nanoTime() - started;
        served = c.tokens();
        // A figure for the report, not an assertion: one cold request, JIT warm-up included.
        System.out.printf(
            "stories260K on %d ranks %s: 80 tokens in %.1f ms%n", ranks, parallel, elapsed / 1e6);
      }
      System.out.println(
          "stories260K served greedy on "
              + ranks
              + " ranks "
              + parallel
              + ": "
              + Arrays.toString(served));
      assertThat(served).containsExactly(direct);
      assertThat(Arrays.copyOf(served, StoriesGreedyTest.EXPECTED_PREFIX.length))
          .containsExactly(StoriesGreedyTest.EXPECTED_PREFIX);
      double worst = 0;
      for (int p = 0; p < direct.length; p++) {
        for (int v = 0; v < directLogits[p].length; v++) {
          worst = Math.max(worst, Math.abs(servedLogits[p][v] - directLogits[p][v]));
          if (ranks == 1) {
            assertThat(Float.floatToRawIntBits(servedLogits[p][v]))
                .as("bits of logit %d at position %d", v, p)
                .isEqualTo(Float.floatToRawIntBits(directLogits[p][v]));
          }
        }
      }
      System.out.printf(
          "stories260K on %d ranks %s: largest logit difference %.3g%n", ranks, parallel, worst);
      assertThat(worst).as("largest logit difference to 1 rank").isLessThan(1e-3);
    }
  }

  /** Sim pools with the model's layout, {@code ranks} threads on the local collective. */
  static KvTierConfig config(
      LlamaServingModel model, int ranks, int pageSize, int devicePages, WritePolicy write) {
    return KvTierConfig.builder()
        .device("sim")
        .host("sim")
        .collective("local")
        .ranks(ranks)
        .layout(model.layers(), model.kvHeads(), model.headSize(), Float.BYTES, pageSize)
        .devicePages(devicePages)
        .hostPages(devicePages * 4)
        .writePolicy(write)
        .evictionPolicy(EvictionPolicy.LRU)
        .vocabSize(model.vocabularySize())
        .build();
  }
}
