package io.kvtier.gguf.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufUnsupportedException;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Special tokens, BOS/EOS flags, the stories260K vocabulary, long texts and refusals. */
class TokenizerBehaviourTest {
  @TempDir Path dir;

  private static final Map<String, Tokenizer> OPENED = new ConcurrentHashMap<>();

  private static Tokenizer open(String relative) throws IOException {
    Path path = SharedFiles.require(relative);
    Tokenizer cached = OPENED.get(relative);
    if (cached != null) {
      return cached;
    }
    try (GgufFile file = GgufFile.open(path)) {
      Tokenizer tokenizer = Tokenizer.of(file); // it copies what it needs; the mapping may go
      OPENED.put(relative, tokenizer);
      return tokenizer;
    }
  }

  @Test
  void bosAndEosFollowTheFileFlags() throws IOException {
    Tokenizer spm = open("tokenizers/ggml-vocab-llama-spm.gguf");
    assertThat(spm.encode("Hello world", true)).containsExactly(1, 15043, 3186);
    assertThat(spm.encode("", true)).containsExactly(1);
    Tokenizer llama3 = open("tokenizers/ggml-vocab-llama-bpe.gguf");
    assertThat(llama3.vocabulary().addBos()).isTrue();
    assertThat(llama3.encode("Hello", true)[0]).isEqualTo(128000);
    Tokenizer qwen2 = open("tokenizers/ggml-vocab-qwen2.gguf");
    assertThat(qwen2.vocabulary().addBos()).isFalse();
    assertThat(qwen2.encode("Hello", true)).isEqualTo(qwen2.encode("Hello", false));
    assertThat(open("tokenizers/ggml-vocab-gpt-2.gguf").describe())
        .isEqualTo("byte-level BPE (gpt-2), 50257 tokens");
  }

  @Test
  void endOfGenerationCoversTheEndOfTurnTokens() throws IOException {
    assertThat(open("tokenizers/ggml-vocab-llama-bpe.gguf").vocabulary().endOfGenerationIds())
        .contains(128001, 128009); // <|end_of_text|>, <|eot_id|>
    assertThat(open("tokenizers/ggml-vocab-qwen2.gguf").vocabulary().endOfGenerationIds())
        .containsExactly(151643, 151645); // <|endoftext|>, <|im_end|>
    assertThat(open("models/tinyllamas-stories-260k-f32.gguf").vocabulary().endOfGenerationIds())
        .containsExactly(2);
  }

  @Test
  void controlTokensAreMatchedOnlyWhenAskedAndUserDefinedAlways() throws IOException {
    Tokenizer qwen2 = open("tokenizers/ggml-vocab-qwen2.gguf");
    int[] parsed = qwen2.encode("<|im_start|>user\nHi<|im_end|>", false, true);
    assertThat(parsed[0]).isEqualTo(151644);
    assertThat(parsed[parsed.length - 1]).isEqualTo(151645);
    assertThat(qwen2.encode("<|im_start|>", false, false)).doesNotContain(151644);
    assertThat(qwen2.decode(parsed)).isEqualTo("user\nHi");
    assertThat(qwen2.decode(parsed, true)).isEqualTo("<|im_start|>user\nHi<|im_end|>");
    assertThat(qwen2.encode("a[PAD151646]b", false)).contains(151646);

    Tokenizer spm = open("tokenizers/ggml-vocab-llama-spm.gguf");
    // a space is put before the text after a special token, as at the start
    assertThat(spm.encode("<s>Hello", false, true)).containsExactly(1, 15043);
    assertThat(spm.decode(new int[] {1, 15043}, true)).isEqualTo("<s>Hello");
  }

  @Test
  void storiesVocabularyDecodesTheKnownGreedyStart() throws IOException {
    Tokenizer stories = open("models/tinyllamas-stories-260k-f32.gguf");
    assertThat(stories).isInstanceOf(SentencePieceTokenizer.class);
    assertThat(stories.vocabulary().size()).isEqualTo(512);
    assertThat(stories.vocabulary().bos()).hasValue(1);
    assertThat(stories.vocabulary().eos()).hasValue(2);
    int[] greedy = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426};
    assertThat(stories.decode(greedy))
        .isEqualTo("Once upon a time, there was a little girl named Lily.");
    // and the sentence, as a prompt, is BOS followed by exactly those ids
    int[] prompt = stories.encode("Once upon a time, there was a little girl named Lily.", true);
    assertThat(prompt[0]).isEqualTo(1);
    assertThat(Arrays.copyOfRange(prompt, 1, prompt.length)).containsExactly(greedy);
    String text = "Once upon a time, a cat sat. \u00e9\u6f22\ud83e\udd99";
    int[] ids = stories.encode(text, true);
    assertThat(ids[0]).isEqualTo(1);
    assertThat(stories.decode(ids)).isEqualTo(text); // é, 漢 and 🦙 go through byte tokens
  }

  @Test
  void longTextsRoundTrip() throws IOException {
    StringBuilder b = new StringBuilder();
    Random random = new Random(7);
    String[] words = {
      "the", "cache", "tier", "Ünïcödé", "漢字", "🦙", "  ", "\n", "1234567", "'s", "don't", "!!",
      "\t"
    };
    while (b.length() < 10_000) {
      b.append(words[random.nextInt(words.length)]).append(random.nextBoolean() ? " " : "");
    }
    String text = b.toString();
    String longWord = "a".repeat(10_000); // one pre-token word: merges must not be quadratic
    for (String name : new String[] {"llama-spm", "llama-bpe", "qwen2", "gpt-2"}) {
      Tokenizer t = open("tokenizers/ggml-vocab-" + name + ".gguf");
      int[] ids = t.encode(text, false);
      int[] longIds = t.encode(longWord, false);
      assertThat(t.decode(ids)).as(name).isEqualTo(text);
      assertThat(t.decode(longIds)).as(name).isEqualTo(longWord);
    }
  }

  @Test
  void anUnsupportedModelOrPreTokenizerIsOneLine() throws IOException {
    Path path = dir.resolve("v.gguf");
    new GgufWriter(3).put("tokenizer.ggml.model", GgufValue.ofString("bert")).write(path);
    try (GgufFile f = GgufFile.open(path)) {
      assertThatThrownBy(() -> Tokenizer.of(f))
          .isInstanceOf(GgufUnsupportedException.class)
          .hasMessage(
              path
                  + ": tokenizer.ggml.model 'bert' is not supported; supported: llama"
                  + " (SentencePiece), gpt2 (byte-level BPE)");
    }
    new GgufWriter(3)
        .put("tokenizer.ggml.model", GgufValue.ofString("gpt2"))
        .put("tokenizer.ggml.pre", GgufValue.ofString("deepseek-llm"))
        .write(path);
    try (GgufFile f = GgufFile.open(path)) {
      assertThatThrownBy(() -> Tokenizer.of(f))
          .isInstanceOf(GgufUnsupportedException.class)
          .hasMessage(
              path
                  + ": tokenizer.ggml.pre 'deepseek-llm' is not supported; supported:"
                  + " llama-bpe, qwen2, gpt-2, smollm, default");
    }
  }
}
