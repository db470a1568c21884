package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.tokenizer.Tokenizer;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The code of modules/gguf/README.md, run on stories260K. */
class ReadmeExampleTest {
  @Test
  void theReadmeTourRuns() throws IOException {
    Path path = SharedFiles.require("models/tinyllamas-stories-260k-f32.gguf");
    Tokenizer kept;
    try (GgufFile file = GgufFile.open(path)) {
      ModelHyperparameters shape = ModelHyperparameters.of(file); // llama or qwen2
      GgufTensor wq = file.tensor("blk.0.attn_q.weight"); // a slice of the mapping
      float[] row = wq.dequantizeRow(0); // reference path only
      Tokenizer tokenizer = Tokenizer.of(file); // outlives the file
      int[] ids = tokenizer.encode("Once upon a time", true); // BOS where the file says so

      assertThat(shape.blockCount()).isEqualTo(5);
      assertThat(row).hasSize(64);
      assertThat(ids[0]).isEqualTo(1);
      assertThat(tokenizer.decode(ids)).isEqualTo("Once upon a time");
      kept = tokenizer;
    }
    assertThat(kept.decode(kept.encode("Lily", false))).isEqualTo("Lily");
  }
}
