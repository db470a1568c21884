package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real stories260K model (GGUF version 1, F32), read in place and rewritten as version 3. */
class StoriesModelTest {
  @TempDir Path dir;

  private static Path model() {
    return SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
  }

  @Test
  void headerAndHyperparametersAreTheKnownFacts() throws IOException {
    try (GgufFile f = GgufFile.open(model())) {
      assertThat(f.version()).isEqualTo(1);
      ModelHyperparameters h = ModelHyperparameters.of(f);
      assertThat(h.architecture()).isEqualTo("llama");
      assertThat(h.embeddingLength()).isEqualTo(64);
      assertThat(h.blockCount()).isEqualTo(5);
      assertThat(h.headCount()).isEqualTo(8);
      assertThat(h.headCountKv()).isEqualTo(4);
      assertThat(h.headSize()).isEqualTo(8);
      assertThat(h.feedForwardLength()).isEqualTo(172);
      assertThat(h.contextLength()).isEqualTo(512);
      assertThat(h.vocabularySize()).isEqualTo(512);
      assertThat(h.ropeFreqBase()).isEqualTo(10_000f);
      assertThat(h.rmsNormEpsilon()).isPositive();
      assertThat(h.ropeScaling()).isEqualTo(RopeScaling.NONE);
      assertThat(f.getString("tokenizer.ggml.model")).isEqualTo("llama");
      assertThat(f.getInt("tokenizer.ggml.bos_token_id")).isEqualTo(1);
      assertThat(f.getInt("tokenizer.ggml.eos_token_id")).isEqualTo(2);
      assertThat(f.tensorInfos())
          .allSatisfy(t -> assertThat(t.type()).isEqualTo(GgufTensorType.F32));
      assertThat(f.tensor("token_embd.weight").dims()).containsExactly(64, 512);
      assertThat(f.tensor("blk.0.attn_k.weight").dims()).containsExactly(64, 32);
      assertThat(f.tensor("blk.4.ffn_gate.weight").dims()).containsExactly(64, 172);
    }
  }

  @Test
  void everyTensorIsReadableInPlace() throws IOException {
    try (GgufFile f = GgufFile.open(model())) {
      long total = 0;
      for (GgufTensorInfo info : f.tensorInfos()) {
        GgufTensor t = f.tensor(info.name());
        assertThat(t.data().isMapped()).as(info.name()).isTrue();
        for (long r = 0; r < info.rowCount(); r++) {
          float[] row = t.dequantizeRow(r);
          for (float v : row) {
            assertThat(Float.isFinite(v)).as("%s row %d", info.name(), r).isTrue();
          }
        }
        total += info.elementCount();
      }
      assertThat(total * 4).isLessThanOrEqualTo(f.path().toFile().length());
    }
  }

  @Test
  void rewritesAsVersion3AndReadsBackEqual() throws IOException {
    Path v3 = dir.resolve("stories260K-v3.gguf");
    try (GgufFile f = GgufFile.open(model())) {
      GgufWriter.copyOf(f, 3).write(v3);
      try (GgufFile g = GgufFile.open(v3)) {
        assertThat(g.version()).isEqualTo(3);
        assertThat(g.metadata()).isEqualTo(f.metadata());
        assertThat(g.tensorInfos()).hasSameSizeAs(f.tensorInfos());
        for (GgufTensorInfo info : f.tensorInfos()) {
          GgufTensor a = f.tensor(info.name());
          GgufTensor b = g.tensor(info.name());
          assertThat(Arrays.equals(b.dims(), a.dims())).isTrue();
          assertThat(b.type()).isEqualTo(a.type());
          assertThat(b.data().mismatch(a.data())).as(info.name()).isEqualTo(-1L);
        }
      }
    }
  }
}
