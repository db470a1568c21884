package io.kvtier.cli;

import io.kvtier.gguf.GgufArray;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A vocabulary file for the tests that write a model with {@code kvtier model synth}: 32
 * byte-level BPE tokens {@code t0..t31} without merges, BOS 1, EOS 2; enough for serve to open
 * the model and its tokenizer.
 */
final class TestVocabulary {
  private TestVocabulary() {}

  /** Writes the vocabulary to {@code path} and returns it. */
  static Path write(Path path) throws IOException {
    String[] tokens = new String[32];
    Arrays.setAll(tokens, i -> "t" + i);
    new GgufWriter(3)
        .put("tokenizer.ggml.model", GgufValue.ofString("gpt2"))
        .put("tokenizer.ggml.tokens", GgufValue.ofArray(GgufArray.ofStrings(tokens)))
        .put("tokenizer.ggml.merges", GgufValue.ofArray(GgufArray.ofStrings(new String[0])))
        .put("tokenizer.ggml.bos_token_id", GgufValue.ofUint32(1))
        .put("tokenizer.ggml.eos_token_id", GgufValue.ofUint32(2))
        .write(path);
    return path;
  }
}
