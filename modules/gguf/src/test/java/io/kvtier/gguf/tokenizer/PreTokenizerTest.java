package io.kvtier.gguf.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pre-tokenizers that chain expressions ({@code smollm}, {@code default}), against splits
 * derived by hand from llama.cpp's expressions, and a file that names no pre-tokenizer.
 */
class PreTokenizerTest {
  @TempDir Path dir;

  @Test
  void smollmSplitsEveryDigitThenGpt2Words() {
    // \p{N} first: each digit is a word, the text around them another; then GPT-2's words.
    assertThat(PreTokenizer.SMOLLM.split("abc 12345 don't"))
        .containsExactly("abc", " ", "1", "2", "3", "4", "5", " don", "'t");
    assertThat(PreTokenizer.byName("smollm")).isSameAs(PreTokenizer.SMOLLM);
  }

  @Test
  void defaultSplitsPunctuationAndSymbolsThenWordsThenDigitsInThrees() {
    // [\p{P}$+<=>^~|]+ first: "," "!" "$" "+" apart; then GPT-2's words; then \p{N}+; then
    // [0-9]{3}: 1234567 as 123 456 7.
    assertThat(PreTokenizer.DEFAULT.split("Hello, world! $100+1234567"))
        .containsExactly("Hello", ",", " world", "!", " ", "$", "100", "+", "123", "456", "7");
    // '`' is a symbol llama.cpp's default leaves to GPT-2's words
    assertThat(PreTokenizer.DEFAULT.split("a`b")).containsExactly("a", "`", "b");
  }

  @Test
  void aBytePairFileWithoutAPreTokenizerUsesTheDefaultAndRoundTrips() throws IOException {
    Path gpt2 = SharedFiles.require("tokenizers/ggml-vocab-gpt-2.gguf");
    for (String pre : List.of("", "default", "smollm")) {
      Path copy = dir.resolve("gpt2-" + pre + ".gguf");
      try (GgufFile file = GgufFile.open(gpt2)) {
        GgufWriter writer = new GgufWriter(3);
        file.metadata()
            .forEach(
                (key, value) -> {
                  if (!key.equals("tokenizer.ggml.pre")) {
                    writer.put(key, value);
                  }
                });
        if (!pre.isEmpty()) {
          writer.put("tokenizer.ggml.pre", GgufValue.ofString(pre));
        }
        writer.write(copy);
      }
      try (GgufFile file = GgufFile.open(copy)) {
        BytePairTokenizer tokenizer = (BytePairTokenizer) Tokenizer.of(file);
        assertThat(tokenizer.preTokenizer().ggufName()).isEqualTo(pre.isEmpty() ? "default" : pre);
        String text = "It costs $1234567, isn't it? 42 \u00e9t\u00e9s \ud83e\udd99";
        int[] ids = tokenizer.encode(text, false);
        assertThat(tokenizer.decode(ids)).as(pre).isEqualTo(text);
        // digits never merge across the pre-tokenizer's splits
        int[] digits = tokenizer.encode("1234567", false);
        assertThat(tokenizer.decode(digits)).isEqualTo("1234567");
        assertThat(digits).hasSize(pre.equals("smollm") ? 7 : 3);
      }
    }
  }
}
