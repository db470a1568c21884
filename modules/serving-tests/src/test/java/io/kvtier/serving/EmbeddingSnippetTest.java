package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.spi.BackendMetrics;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The quick start of docs/EMBEDDING.md (and the README's "Embed"), as it is shown there. */
@Timeout(120)
class EmbeddingSnippetTest {

  @Test
  void theQuickStartServesTheTinyModelOnTwoRankThreads() throws Exception {
    List<Completion> out = new ArrayList<>();
    // --- docs/EMBEDDING.md quick start
    ServingModel model = ModelProvider.open("tiny", Map.of()); // or a ServingModel of your own
    KvTierConfig config =
        KvTierConfig.builder()
            .device("sim") // pools, rank group and L3 store are found by name (ServiceLoader)
            .host("sim")
            .collective("local")
            .layout(2, 4, 16, 4, 16) // the tiny model's KV: layers, heads, head dim, bytes, page
            .devicePages(256)
            .hostPages(1024)
            .ranks(2) // two rank threads, each holding half of the heads
            .build();
    try (ModelEngine engine = ModelEngine.open(model, config, BackendMetrics.NOOP)) {
      int[] system = IntStream.range(1, 65).toArray(); // a 64-token system prompt
      for (int user = 0; user < 3; user++) {
        int[] prompt = IntStream.concat(IntStream.of(system), IntStream.of(100 + user)).toArray();
        Completion c = engine.generate(prompt, 8);
        System.out.println(Arrays.toString(c.tokens()) + ", " + c.cachedTokens() + " cached");
        out.add(c);
      }
    }
    // ---
    assertThat(out).allSatisfy(c -> assertThat(c.tokens()).hasSize(8));
    assertThat(out.get(0).cachedTokens()).isZero();
    assertThat(out.get(1).cachedTokens()).isEqualTo(64);
    assertThat(out.get(2).cachedTokens()).isEqualTo(64);
  }
}
