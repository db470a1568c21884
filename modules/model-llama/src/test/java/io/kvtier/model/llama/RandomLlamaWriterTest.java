package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.LlamaShape;
import io.kvtier.gguf.ModelHyperparameters;
import io.kvtier.gguf.RandomLlamaWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** {@link RandomLlamaWriter} at the {@code test-tiny} shape: files that read back and run. */
class RandomLlamaWriterTest {
  private static final long SEED = Long.getLong("kvtier.tests.seed", 3L);

  @ParameterizedTest
  @EnumSource(
      value = GgufTensorType.class,
      names = {"F32", "F16", "BF16", "Q8_0", "Q4_0"})
  void writesAFileThatReadsBackAndRuns(GgufTensorType type, @TempDir Path dir) throws IOException {
    Path vocabulary = dir.resolve("vocabulary.gguf");
    WordVocabulary.write(vocabulary, 100);
    Path path = dir.resolve("tiny.gguf");
    try (GgufFile vocab = GgufFile.open(vocabulary)) {
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, vocab, type, SEED, path);
    }
    try (GgufFile file = GgufFile.open(path)) {
      assertThat(file.version()).isEqualTo(3);
      assertThat(file.getString("general.name")).isEqualTo("test-tiny (random weights)");
      assertThat(file.getBoolean(RandomLlamaWriter.RANDOM_WEIGHTS_KEY)).isTrue();
      assertThat(file.getArray("tokenizer.ggml.tokens").size()).isEqualTo(100);
      assertThat(file.getInt("tokenizer.ggml.bos_token_id")).isEqualTo(1);
      assertThat(file.tensor("blk.1.ffn_down.weight").type()).isEqualTo(type);
      assertThat(file.tensor("blk.1.ffn_norm.weight").type()).isEqualTo(GgufTensorType.F32);
      ModelHyperparameters shape = ModelHyperparameters.of(file);
      assertThat(shape.blockCount()).isEqualTo(LlamaShape.TEST_TINY.blockCount());
      assertThat(shape.headCountKv()).isEqualTo(LlamaShape.TEST_TINY.headCountKv());
      assertThat(shape.vocabularySize()).isEqualTo(100);
      long weights = file.tensorInfos().stream().mapToLong(info -> info.elementCount()).sum();
      assertThat(weights).isEqualTo(LlamaShape.TEST_TINY.parameterCount(100));

      LlamaModel model = LlamaModel.of(file);
      float[][] logits = model.forward(new int[] {1, 5, 9}, 0, ArrayKvStore.forModel(model), true);
      assertThat(logits).hasNumberOfRows(3);
      for (float[] row : logits) {
        assertThat(row).hasSize(100);
        for (float logit : row) {
          assertThat(Float.isFinite(logit)).as("logit %s", logit).isTrue();
        }
      }
    }
  }

  @Test
  void theSameSeedWritesTheSameBytesAndAnotherSeedDoesNot(@TempDir Path dir) throws IOException {
    Path vocabulary = dir.resolve("vocabulary.gguf");
    WordVocabulary.write(vocabulary, 40);
    Path a = dir.resolve("a.gguf");
    Path b = dir.resolve("b.gguf");
    Path c = dir.resolve("c.gguf");
    try (GgufFile vocab = GgufFile.open(vocabulary)) {
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, vocab, GgufTensorType.Q8_0, SEED, a);
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, vocab, GgufTensorType.Q8_0, SEED, b);
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, vocab, GgufTensorType.Q8_0, SEED + 1, c);
    }
    assertThat(Files.mismatch(a, b)).isEqualTo(-1L);
    assertThat(Files.mismatch(a, c)).isNotEqualTo(-1L);
  }

  /** llama-quantize's fallbacks for a K-quant whose super-blocks do not divide the rows. */
  @Test
  void kQuantsFallBackAsLlamaQuantizeDoesWhereRowsAreNotWholeSuperBlocks() {
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q4_K, 1536)).isEqualTo(GgufTensorType.Q4_K);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q4_K, 576)).isEqualTo(GgufTensorType.Q5_0);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q5_K, 896)).isEqualTo(GgufTensorType.Q5_1);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q6_K, 96)).isEqualTo(GgufTensorType.Q8_0);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q4_K, 48)).isEqualTo(GgufTensorType.F16);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q4_0, 48)).isEqualTo(GgufTensorType.Q4_0);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q3_K, 64)).isEqualTo(GgufTensorType.IQ4_NL);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q2_K, 896))
        .isEqualTo(GgufTensorType.IQ4_NL);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.IQ4_XS, 576))
        .isEqualTo(GgufTensorType.IQ4_NL);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.IQ4_XS, 2048))
        .isEqualTo(GgufTensorType.IQ4_XS);
    assertThat(RandomLlamaWriter.typeFor(GgufTensorType.Q2_K, 48)).isEqualTo(GgufTensorType.F16);
  }

  @Test
  void refusesAFileWithoutTokensAndRowsThatAreNotWholeBlocks(@TempDir Path dir) throws IOException {
    Path vocabulary = dir.resolve("vocabulary.gguf");
    WordVocabulary.write(vocabulary, 40);
    Path out = dir.resolve("out.gguf");
    try (GgufFile vocab = GgufFile.open(vocabulary)) {
      LlamaShape narrow = new LlamaShape("narrow", 1, 48, 2, 1, 96, 64, 10_000f, false);
      assertThatThrownBy(() -> RandomLlamaWriter.write(narrow, vocab, GgufTensorType.Q4_0, 1, out))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("shape narrow: row length 48 is not a multiple of the Q4_0 block size 32");
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, vocab, GgufTensorType.F16, 1, out);
    }
    try (GgufFile model = GgufFile.open(out)) {
      Path again = dir.resolve("again.gguf");
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, model, GgufTensorType.F16, 1, again);
      assertThat(Files.mismatch(out, again))
          .as("a model file's tokenizer serves as well")
          .isEqualTo(-1L);
    }
    assertThatThrownBy(() -> LlamaShape.of("llama-70b"))
        .hasMessage(
            "unknown shape 'llama-70b'; known: smollm-135m, llama-1b, qwen2.5-0.5b, gemma3-1b,"
                + " test-tiny");
    assertThatThrownBy(() -> new LlamaShape("g", 1, 64, 4, 2, 96, 64, 1f, true, 16, "gemma3", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "shape g: architecture gemma3 with sliding window 0: a llama shape has no window, a"
                + " gemma3 shape a window of at least 1 and a tied output");
    assertThatThrownBy(() -> new LlamaShape("m", 1, 64, 4, 2, 96, 64, 1f, false, 16, "mamba", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("architecture mamba with sliding window 0 and a separate output");
  }

  @Test
  void namedShapesHaveTheirModelsSizes() {
    // SmolLM-135M with its own 49152-token vocabulary has 134.5M weights (tied output)
    assertThat(LlamaShape.SMOLLM_135M.parameterCount(49_152)).isEqualTo(134_515_008L);
    // Llama 3.2 1B with its 128256-token vocabulary has 1.236B weights (tied output)
    assertThat(LlamaShape.LLAMA_1B.parameterCount(128_256)).isEqualTo(1_235_814_400L);
    // Gemma 3 1B with its 262144-token vocabulary has 999.9M weights (tied output, its per-head
    // and post norms)
    assertThat(LlamaShape.GEMMA3_1B.parameterCount(262_144)).isEqualTo(999_885_952L);
  }
}
