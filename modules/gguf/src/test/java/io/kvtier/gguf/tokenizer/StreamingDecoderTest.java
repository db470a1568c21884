package io.kvtier.gguf.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The decoder that streams: on every reference case of the four vocabularies, id by id, its
 * pieces joined equal the whole decoding and the case's text, and no piece holds a replacement
 * character (a split character is held back, not broken); random ids decode alike whole and
 * streamed.
 */
class StreamingDecoderTest {

  @ParameterizedTest
  @ValueSource(strings = {"llama-spm", "llama-bpe", "qwen2", "gpt-2"})
  void streamedPiecesEqualTheWholeDecodingOnEveryReferenceCase(String name) throws IOException {
    Path gguf = SharedFiles.require("tokenizers/ggml-vocab-" + name + ".gguf");
    List<VocabularyReferenceTest.Case> cases = VocabularyReferenceTest.cases(gguf);
    try (GgufFile file = GgufFile.open(gguf)) {
      Tokenizer tokenizer = Tokenizer.of(file);
      for (VocabularyReferenceTest.Case c : cases) {
        StreamingDecoder decoder = tokenizer.decoder(false);
        StringBuilder streamed = new StringBuilder();
        for (int id : c.ids()) {
          String piece = decoder.add(id);
          assertThat(piece)
              .as("%s %s", name, VocabularyReferenceTest.quote(c.text()))
              .doesNotContain("\ufffd");
          streamed.append(piece);
        }
        streamed.append(decoder.finish());
        assertThat(streamed.toString())
            .as("%s %s", name, VocabularyReferenceTest.quote(c.text()))
            .isEqualTo(tokenizer.decode(c.ids()))
            .isEqualTo(c.text());
      }
    }
  }

  /**
   * A token's bytes alone ({@link Tokenizer#tokenBytes}, what log-probabilities show): on every
   * reference case their concatenation is the text a mid-text decoder streams for the ids, and a
   * byte-fallback token is its one byte.
   */
  @ParameterizedTest
  @ValueSource(strings = {"llama-spm", "llama-bpe", "qwen2", "gpt-2"})
  void eachTokensBytesJoinIntoTheMidTextDecoding(String name) throws IOException {
    Path gguf = SharedFiles.require("tokenizers/ggml-vocab-" + name + ".gguf");
    List<VocabularyReferenceTest.Case> cases = VocabularyReferenceTest.cases(gguf);
    try (GgufFile file = GgufFile.open(gguf)) {
      Tokenizer tokenizer = Tokenizer.of(file);
      for (VocabularyReferenceTest.Case c : cases) {
        java.io.ByteArrayOutputStream joined = new java.io.ByteArrayOutputStream();
        StreamingDecoder decoder = tokenizer.decoder(true, false);
        StringBuilder streamed = new StringBuilder();
        for (int id : c.ids()) {
          joined.writeBytes(tokenizer.tokenBytes(id));
          streamed.append(decoder.add(id));
        }
        streamed.append(decoder.finish());
        assertThat(joined.toString(java.nio.charset.StandardCharsets.UTF_8))
            .as("%s %s", name, VocabularyReferenceTest.quote(c.text()))
            .isEqualTo(streamed.toString());
      }
      if (name.equals("llama-spm")) {
        int c3 = 3 + 0xC3; // Llama 2's byte-fallback ids: <0x00> is 3
        assertThat(tokenizer.vocabulary().text(c3)).isEqualTo("<0xC3>");
        assertThat(tokenizer.tokenBytes(c3)).containsExactly((byte) 0xC3);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"llama-spm", "qwen2"})
  void randomIdsDecodeAlikeWholeAndStreamed(String name) throws IOException {
    Path gguf = SharedFiles.require("tokenizers/ggml-vocab-" + name + ".gguf");
    long seed = Long.getLong("kvtier.tests.seed", new Random().nextLong());
    Random random = new Random(seed);
    try (GgufFile file = GgufFile.open(gguf)) {
      Tokenizer tokenizer = Tokenizer.of(file);
      int size = tokenizer.vocabulary().size();
      for (int round = 0; round < 200; round++) {
        int[] ids = new int[1 + random.nextInt(12)];
        for (int i = 0; i < ids.length; i++) {
          // byte-fallback ids (3..258 in Llama 2's vocabulary) often, to split characters
          ids[i] = random.nextBoolean() ? 3 + random.nextInt(256) : random.nextInt(size);
        }
        boolean special = random.nextBoolean();
        StreamingDecoder decoder = tokenizer.decoder(special);
        StringBuilder streamed = new StringBuilder();
        for (int id : ids) {
          streamed.append(decoder.add(id));
        }
        streamed.append(decoder.finish());
        assertThat(streamed.toString())
            .as("-Dkvtier.tests.seed=%d reproduces: ids %s", seed, java.util.Arrays.toString(ids))
            .isEqualTo(tokenizer.decode(ids, special));
      }
    }
  }
}
