package io.kvtier.model.llama;

import io.kvtier.gguf.GgufArray;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufValueType;
import io.kvtier.gguf.GgufWriter;
import java.io.IOException;
import java.nio.file.Path;

/** A vocabulary-only GGUF file for synthetic models, which needs no shared file. */
final class WordVocabulary {
  private WordVocabulary() {}

  /**
   * A SentencePiece vocabulary of {@code size} tokens whose pieces are unique words ({@code
   * ▁w3}...), so llama.cpp's streamed text maps back to ids: 0 unknown, 1 BOS, 2 EOS.
   */
  static void write(Path path, int size) throws IOException {
    String[] tokens = new String[size];
    float[] scores = new float[size];
    int[] types = new int[size];
    tokens[0] = "<unk>";
    tokens[1] = "<s>";
    tokens[2] = "</s>";
    types[0] = 2;
    types[1] = 3;
    types[2] = 3;
    for (int i = 3; i < size; i++) {
      tokens[i] = "\u2581w" + i;
      scores[i] = -i;
      types[i] = 1;
    }
    GgufWriter writer = new GgufWriter(3);
    writer.put("general.architecture", GgufValue.ofString("llama"));
    writer.put("tokenizer.ggml.model", GgufValue.ofString("llama"));
    writer.put("tokenizer.ggml.tokens", GgufValue.ofArray(GgufArray.ofStrings(tokens)));
    writer.put("tokenizer.ggml.scores", GgufValue.ofArray(GgufArray.ofFloats(scores)));
    writer.put(
        "tokenizer.ggml.token_type", GgufValue.ofArray(new GgufArray(GgufValueType.INT32, types)));
    writer.put("tokenizer.ggml.bos_token_id", GgufValue.ofUint32(1));
    writer.put("tokenizer.ggml.eos_token_id", GgufValue.ofUint32(2));
    writer.put("tokenizer.ggml.unknown_token_id", GgufValue.ofUint32(0));
    writer.write(path);
  }
}
