package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensor;
import io.kvtier.gguf.GgufTensorInfo;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Q8_0 copy of stories260K (written with {@link GgufWriter}, version 3) runs through the Q8_0
 * kernels with logits close to the F32 file's. Matrices whose rows are not a multiple of Q8_0's
 * 32-weight block (ffn_down: 172) and the 1-D norms stay F32, as llama.cpp's quantizer does.
 */
class StoriesQ8Test {
  /**
   * Largest allowed |logit(Q8_0) - logit(F32)| (measured: 0.27 over 48 positions, logits
   * spanning the value printed), and greedy's choice must agree at every position.
   */
  static final float TOLERANCE = 0.5f;

  @Test
  void q8CopyGivesLogitsWithinToleranceOfF32(@TempDir Path dir) throws IOException {
    Path source = SharedFiles.require(StoriesGreedyTest.STORIES);
    Path q8 = dir.resolve("stories260k-q8_0.gguf");
    try (GgufFile f32 = GgufFile.open(source)) {
      GgufWriter writer = new GgufWriter(3);
      f32.metadata().forEach(writer::put);
      int quantized = 0;
      for (GgufTensorInfo info : f32.tensorInfos()) {
        GgufTensor t = f32.tensor(info.name());
        if (info.dims().length == 2 && info.rowLength() % 32 == 0) {
          writer.addTensor(
              info.name(),
              GgufTensorType.Q8_0,
              info.dims(),
              (row, values) -> System.arraycopy(t.dequantizeRow(row), 0, values, 0, values.length));
          quantized++;
        } else {
          writer.addTensor(info.name(), info.type(), info.dims(), t.data());
        }
      }
      writer.write(q8);
      assertThat(quantized).as("quantized matrices").isGreaterThan(20);

      try (GgufFile q8File = GgufFile.open(q8)) {
        assertThat(q8File.tensor("blk.0.attn_q.weight").type()).isEqualTo(GgufTensorType.Q8_0);
        LlamaModel reference = LlamaModel.of(f32);
        LlamaModel model = LlamaModel.of(q8File);
        int bos = f32.getInt("tokenizer.ggml.bos_token_id");
        int[] tokens = new int[48];
        tokens[0] = bos;
        System.arraycopy(StoriesGreedyTest.greedy(reference, bos, 47), 0, tokens, 1, 47);
        float[][] expected = reference.forward(tokens, 0, ArrayKvStore.forModel(reference), true);
        float[][] got = model.forward(tokens, 0, ArrayKvStore.forModel(model), true);
        float worst = 0f;
        float span = 0f;
        int sameArgmax = 0;
        for (int p = 0; p < tokens.length; p++) {
          for (int i = 0; i < expected[p].length; i++) {
            worst = Math.max(worst, Math.abs(expected[p][i] - got[p][i]));
          }
          float min = Float.POSITIVE_INFINITY;
          float max = Float.NEGATIVE_INFINITY;
          for (float logit : expected[p]) {
            min = Math.min(min, logit);
            max = Math.max(max, logit);
          }
          span = Math.max(span, max - min);
          if (StoriesGreedyTest.argmax(expected[p]) == StoriesGreedyTest.argmax(got[p])) {
            sameArgmax++;
          }
        }
        System.out.printf(
            "stories260K Q8_0 vs F32 over %d positions: max |logit diff| %.4f"
                + " (F32 logits span up to %.2f), same argmax at %d%n",
            tokens.length, worst, span, sameArgmax);
        assertThat(worst).isLessThan(TOLERANCE);
        assertThat(sameArgmax).as("positions where greedy agrees").isEqualTo(tokens.length);
      }
    }
  }
}
