package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.KvTierKeys;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.gguf.LlamaShape;
import io.kvtier.gguf.RandomLlamaWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The L3 model id {@code kvtier serve} gives a GGUF file's model. */
class ServedModelTest {
  @TempDir Path dir;

  /** A {@link LlamaShape#TEST_TINY} F32 file of random weights named {@code name}. */
  private Path tinyFile(String name) throws IOException {
    Path vocabulary = TestVocabulary.write(dir.resolve("vocab-" + name));
    Path file = dir.resolve(name);
    try (GgufFile vocab = GgufFile.open(vocabulary)) {
      RandomLlamaWriter.write(LlamaShape.TEST_TINY, vocab, GgufTensorType.F32, 7, file);
    }
    return file;
  }

  /**
   * kvtier before 2026-12-05 stored the KV of a file with RoPE frequency factors as if it had none:
   * the same file's id now ends {@code -rope-freqs}, so a store that outlives the process never
   * serves those pages again; a file without factors keeps its id. The startup line names the
   * factors.
   */
  @Test
  void ropeFrequencyFactorsChangeAFilesL3ModelId() throws IOException {
    Path plain = tinyFile("plain.gguf");
    Path scaled = dir.resolve("scaled.gguf");
    float[] factors = new float[LlamaShape.TEST_TINY.headSize() / 2];
    Arrays.fill(factors, 4f);
    try (GgufFile file = GgufFile.open(plain)) {
      GgufWriter.copyOf(file, 3)
          .addTensor(
              "rope_freqs.weight",
              GgufTensorType.F32,
              new long[] {factors.length},
              (row, values) -> System.arraycopy(factors, 0, values, 0, values.length))
          .write(scaled);
    }
    try (ServedModel a = ServedModel.gguf(plain, Optional.empty());
        ServedModel b = ServedModel.gguf(scaled, Optional.empty())) {
      assertThat(a.l3ModelId()).matches("gguf-[0-9a-f]{16}");
      assertThat(b.l3ModelId()).matches("gguf-[0-9a-f]{16}-rope-freqs");
      assertThat(a.description()).contains("heads of 16, feed-forward");
      assertThat(b.description()).contains("heads of 16 (RoPE frequency factors), feed-forward");
    }
  }

  /**
   * F16 K/V pages hold other bytes than F32 ones: the id ends {@code -kv-f16}, the layout's
   * elements are 2 bytes, and the startup line says so; F32 (the default) keeps the id.
   */
  @Test
  void f16KvHasItsOwnL3ModelIdAndTwoByteElements() throws IOException {
    Path file = tinyFile("model.gguf");
    try (ServedModel f32 = ServedModel.gguf(file, Optional.empty());
        ServedModel f16 =
            ServedModel.gguf(
                file, Optional.empty(), Optional.empty(), Optional.empty(), Optional.of("f16"))) {
      assertThat(f16.l3ModelId()).isEqualTo(f32.l3ModelId() + "-kv-f16");
      assertThat(f32.fixedKeys()).containsEntry(KvTierKeys.DTYPE_BYTES, "4");
      assertThat(f16.fixedKeys()).containsEntry(KvTierKeys.DTYPE_BYTES, "2");
      assertThat(f32.description()).doesNotContain("K/V");
      assertThat(f16.description()).contains(", F16 K/V");
    }
  }
}
