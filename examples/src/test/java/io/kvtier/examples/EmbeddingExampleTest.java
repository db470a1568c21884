package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The embedding guide's example runs, reuses cached tokens, and is what docs/RANK-ENGINE.md shows. */
@Timeout(60)
class EmbeddingExampleTest {
  private static final String BEGIN = "// [embedding-loop]";
  private static final String END = "// [/embedding-loop]";
  private static final String L3_BEGIN = "// [embedding-l3]";
  private static final String L3_END = "// [/embedding-l3]";

  @Test
  void theLoopProducesOutputsAndReusesTheSharedPrefix() {
    EmbeddingExample.Result result = EmbeddingExample.run();

    assertThat(result.outputs()).containsOnlyKeys(1L, 2L);
    assertThat(result.outputs().values()).allSatisfy(tokens -> assertThat(tokens).hasSize(4));
    assertThat(result.stats().finished()).isEqualTo(2);
    // request 2 shares request 1's first 32 tokens: whole pages of them come from the cache
    assertThat(result.stats().deviceHitTokens() + result.stats().hostHitTokens())
        .isGreaterThanOrEqualTo(28);
    assertThat(result.ticks()).isPositive();
  }

  @Test
  void readmeShowsTheCompiledLoopVerbatim() throws IOException {
    Path root = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
    String readme = Files.readString(root.resolve("docs/RANK-ENGINE.md"), StandardCharsets.UTF_8);
    String source =
        Files.readString(
            root.resolve("examples/src/main/java/io/kvtier/examples/EmbeddingExample.java"),
            StandardCharsets.UTF_8);

    String compiled = between(source, BEGIN, END).stripTrailing().stripIndent().strip();
    String shown = between(readme, BEGIN, END).stripTrailing().stripIndent().strip();
    assertThat(compiled).contains("engine.receive(commands)", "engine.check()");
    assertThat(shown).isEqualTo(compiled);
  }

  @Test
  void theL3SetupGivesTheCacheAnL3TierExactlyWhenAStoreIsNamed() {
    for (String store : new String[] {"memory", "none"}) {
      KvTierConfig config =
          KvTierConfig.builder()
              .device("sim")
              .host("sim")
              .set(KvTierKeys.STORE, store)
              .set(KvTierKeys.LAYERS, "2")
              .set(KvTierKeys.KV_HEADS, "1")
              .set(KvTierKeys.HEAD_DIM, "4")
              .set(KvTierKeys.PAGE_SIZE, "4")
              .set(KvTierKeys.DEVICE_PAGES, "16")
              .set(KvTierKeys.HOST_PAGES, "32")
              .build();
      try (KvTierBackends backends = KvTierBackends.open(config);
          L3Executor l3 = L3Executor.inline()) {
        RankCache cache = EmbeddingExample.cacheWithL3(config, backends, l3);
        assertThat(cache.hasL3()).as("kvtier.store=%s", store).isEqualTo(!store.equals("none"));
      }
    }
  }

  @Test
  void readmeShowsTheCompiledL3SetupVerbatim() throws IOException {
    Path root = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
    String readme = Files.readString(root.resolve("docs/RANK-ENGINE.md"), StandardCharsets.UTF_8);
    String source =
        Files.readString(
            root.resolve("examples/src/main/java/io/kvtier/examples/EmbeddingExample.java"),
            StandardCharsets.UTF_8);

    String compiled = between(source, L3_BEGIN, L3_END).stripTrailing().stripIndent().strip();
    String shown = between(readme, L3_BEGIN, L3_END).stripTrailing().stripIndent().strip();
    assertThat(compiled).contains("backends.l3Setup(l3)");
    assertThat(shown).isEqualTo(compiled);
  }

  private static String between(String text, String begin, String end) {
    int from = text.indexOf(begin);
    int to = text.indexOf(end, from + 1);
    assertThat(from).as("marker %s", begin).isNotNegative();
    assertThat(to).as("marker %s", end).isPositive();
    int lineStart = text.indexOf('\n', from) + 1;
    int lineEnd = text.lastIndexOf('\n', to) + 1;
    return text.substring(lineStart, lineEnd);
  }
}
