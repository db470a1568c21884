package io.kvtier.gguf.text;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.serving.ModelText;
import io.kvtier.serving.ModelText.Message;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A GGUF file's text as the server uses it: prompts with the file's BOS rule and special tokens
 * parsed, every reference case of the four vocabularies round-tripping through the streaming
 * decoder, the leading-space rule of a reply, and the contents-only chat of a file without a
 * template.
 */
class GgufTextTest {

  private static GgufText open(String relative) throws IOException {
    try (GgufFile file = GgufFile.open(Vocabularies.require(relative))) {
      return GgufText.of(file);
    }
  }

  private static String stream(ModelText.Decoder decoder, int[] ids) {
    StringBuilder text = new StringBuilder();
    for (int id : ids) {
      String piece = decoder.add(id);
      assertThat(piece).as("a split character is held back").doesNotContain("\ufffd");
      text.append(piece);
    }
    return text.append(decoder.finish()).toString();
  }

  @ParameterizedTest
  @ValueSource(strings = {"llama-spm", "llama-bpe", "qwen2", "gpt-2"})
  void everyReferenceCaseRoundTripsThroughThePromptAndTheStreamingDecoder(String name)
      throws IOException {
    GgufText text = open("tokenizers/ggml-vocab-" + name + ".gguf");
    String inp =
        Files.readString(
            Vocabularies.require("tokenizers/ggml-vocab-" + name + ".gguf.inp"),
            StandardCharsets.UTF_8);
    List<String> cases = new ArrayList<>(Arrays.asList(inp.split("\n__ggml_vocab_test__\n", -1)));
    cases.removeIf(String::isEmpty);
    assertThat(cases).hasSizeGreaterThan(40);
    for (String c : cases) {
      int[] prompt = text.encode(c);
      assertThat(stream(text.decoder(new int[0], true), prompt))
          .as("%s: %s", name, c)
          .isEqualTo(text.tokenizer().decode(prompt))
          .isEqualTo(c);
    }
  }

  @Test
  void promptsFollowTheFileBosRuleAndParseSpecialTokens() throws IOException {
    GgufText llama3 = open("tokenizers/ggml-vocab-llama-bpe.gguf");
    assertThat(llama3.encode("Hello")[0]).isEqualTo(128000);
    assertThat(llama3.name()).isEqualTo("ggml-vocab-llama-bpe");
    GgufText qwen2 = open("tokenizers/ggml-vocab-qwen2.gguf");
    assertThat(qwen2.encode("<|im_start|>user")[0]).as("no BOS; parsed").isEqualTo(151644);
    GgufText spm = open("tokenizers/ggml-vocab-llama-spm.gguf");
    assertThat(spm.encode("Hello world")).containsExactly(1, 15043, 3186);
  }

  @Test
  void aReplyDropsSentencePiecesFirstSpaceAndACompletionKeepsItAfterText() throws IOException {
    GgufText spm = open("tokenizers/ggml-vocab-llama-spm.gguf");
    int[] hello = {15043, 3186}; // "▁Hello", "▁world"
    int[] prompt = spm.encode("Say"); // BOS, "▁Say"

    assertThat(stream(spm.decoder(prompt, true), hello)).isEqualTo("Hello world");
    assertThat(stream(spm.decoder(prompt, false), hello))
        .as("as decode(prompt + completion) adds to decode(prompt)")
        .isEqualTo(" Hello world")
        .isEqualTo(
            spm.tokenizer()
                .decode(IntStream.concat(IntStream.of(prompt), IntStream.of(hello)).toArray())
                .substring(spm.tokenizer().decode(prompt).length()));
    assertThat(stream(spm.decoder(new int[] {1}, false), hello))
        .as("after BOS alone the completion starts the text")
        .isEqualTo("Hello world");
    // byte-level BPE keeps every space either way
    GgufText gpt2 = open("tokenizers/ggml-vocab-gpt-2.gguf");
    int[] ids = gpt2.tokenizer().encode(" Hello", false);
    assertThat(stream(gpt2.decoder(new int[0], true), ids)).isEqualTo(" Hello");
  }

  @Test
  void aFileWithoutATemplateChatsAsABaseModelOnTheContents() throws IOException {
    GgufText stories = open("models/tinyllamas-stories-260k-f32.gguf");

    assertThat(stories.chatTemplate()).isEmpty();
    assertThat(stories.chat(List.of(new Message("user", "Once upon a time"))))
        .containsExactly(stories.tokenizer().encode("Once upon a time", true, false));
    assertThat(
            stories.chat(
                List.of(new Message("system", "A story."), new Message("user", "<s>Lily"))))
        .as("contents joined by a newline; nothing parsed as a special token")
        .containsExactly(stories.tokenizer().encode("A story.\n<s>Lily", true, false));
    assertThat(stories.endOfGeneration()).containsExactly(2);
  }
}
