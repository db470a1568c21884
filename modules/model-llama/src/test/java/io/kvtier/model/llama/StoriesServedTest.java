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
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * stories260K served by the engine as model {@code gguf} (sim pools, its KV in kvtier's pages):
 * greedy from BOS, 80 tokens, on 1 rank equals {@link LlamaModel}'s direct greedy decoding bit for
 * bit (the same tokens from the same logits), and starts as llama.cpp's does.
 */
class StoriesServedTest {

  @Test
  @Timeout(120)
  void greedyFromBosThroughTheEngineEqualsTheDirectGreedy() throws Exception {
    Path path = SharedFiles.require(StoriesGreedyTest.STORIES);
    int[] direct;
    int bos;
    try (GgufFile file = GgufFile.open(path)) {
      bos = file.getInt("tokenizer.ggml.bos_token_id");
      direct = StoriesGreedyTest.greedy(LlamaModel.of(file), bos, 80);
    }
    ServingModel opened = ModelProvider.open("gguf", Map.of("file", path.toString()));
    try (LlamaServingModel model = (LlamaServingModel) opened) {
      assertThat(model.name()).isNotBlank();
      assertThat(model.vocabularySize()).isEqualTo(512);
      assertThat(model.maxContext()).isEqualTo(512);
      KvTierConfig config = config(model, 1, 16, 64, WritePolicy.WRITE_THROUGH);
      int[] served;
      try (ModelEngine engine = ModelEngine.open(model, config, BackendMetrics.NOOP)) {
        Completion c = engine.generate(new int[] {bos}, 80);
        served = c.tokens();
      }
      System.out.println("stories260K served greedy: " + Arrays.toString(served));
      assertThat(served).containsExactly(direct);
      assertThat(Arrays.copyOf(served, StoriesGreedyTest.EXPECTED_PREFIX.length))
          .containsExactly(StoriesGreedyTest.EXPECTED_PREFIX);
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
