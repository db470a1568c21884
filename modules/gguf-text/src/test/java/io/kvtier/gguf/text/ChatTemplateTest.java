package io.kvtier.gguf.text;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.tokenizer.Tokenizer;
import io.kvtier.serving.ModelText.Message;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chat templates of three families, each written into a copy of its real vocabulary: the
 * rendered text equals the text derived by hand from the template, and the prompt's ids are the
 * special tokens' single ids around the tokenization of the text between them, with exactly one
 * BOS where the file adds one.
 */
class ChatTemplateTest {
  /** Meta's Llama 3 template (as in Llama 3 8B Instruct's tokenizer_config.json). */
  static final String LLAMA3 =
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content ="
          + " '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+"
          + " message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content"
          + " = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if"
          + " add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n'"
          + " }}{% endif %}";

  /** Qwen2's ChatML template, with its default system message. */
  static final String CHATML =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{"
          + " '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif"
          + " %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' +"
          + " '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%"
          + " endif %}";

  /** Llama 2's [INST] template, which folds the system message into the first turn. */
  static final String LLAMA2 =
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set"
          + " system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages"
          + " %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if"
          + " (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation"
          + " roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if"
          + " loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' +"
          + " system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content"
          + " = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token +"
          + " '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant'"
          + " %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

  @TempDir Path dir;

  private GgufText open(String vocabulary, String template) throws IOException {
    Path copy =
        Vocabularies.withTemplate(
            Vocabularies.require("tokenizers/ggml-vocab-" + vocabulary + ".gguf"), template, dir);
    try (GgufFile file = GgufFile.open(copy)) {
      return GgufText.of(file);
    }
  }

  /** Concatenates ids: ints are special ids, strings the tokenization of plain text. */
  private static int[] ids(Tokenizer tokenizer, Object... parts) {
    IntStream.Builder ids = IntStream.builder();
    for (Object part : parts) {
      if (part instanceof Integer id) {
        ids.add(id);
      } else {
        for (int id : tokenizer.encode((String) part, false, false)) {
          ids.add(id);
        }
      }
    }
    return ids.build().toArray();
  }

  @Test
  void llama3HeadersBecomeSpecialIdsAfterOneBos() throws IOException {
    GgufText text = open("llama-bpe", LLAMA3);
    List<Message> chat = List.of(new Message("system", "Be brief. "), new Message("user", "Hi"));

    assertThat(text.chatTemplate().orElseThrow().render(chat, true))
        .isEqualTo(
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n");
    // <|begin_of_text|> 128000, <|start_header_id|> 128006, <|end_header_id|> 128007,
    // <|eot_id|> 128009: the template's BOS text is dropped, the tokenizer adds the one BOS
    Tokenizer t = text.tokenizer();
    assertThat(text.chat(chat))
        .containsExactly(
            ids(
                t,
                128000,
                128006,
                "system",
                128007,
                "\n\nBe brief.",
                128009,
                128006,
                "user",
                128007,
                "\n\nHi",
                128009,
                128006,
                "assistant",
                128007,
                "\n\n"));
    assertThat(text.endOfReply()).contains(128001, 128009); // <|end_of_text|>, <|eot_id|>
  }

  @Test
  void chatMlAddsItsDefaultSystemAndNoBos() throws IOException {
    GgufText text = open("qwen2", CHATML);
    List<Message> chat = List.of(new Message("user", "Hi"));

    assertThat(text.chatTemplate().orElseThrow().render(chat, true))
        .isEqualTo(
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    // <|im_start|> 151644, <|im_end|> 151645; Qwen2 adds no BOS
    Tokenizer t = text.tokenizer();
    assertThat(text.chat(chat))
        .containsExactly(
            ids(
                t,
                151644,
                "system\nYou are a helpful assistant.",
                151645,
                "\n",
                151644,
                "user\nHi",
                151645,
                "\n",
                151644,
                "assistant\n"));
    assertThat(text.endOfReply()).containsExactlyInAnyOrder(151643, 151645);
    // a developer message is the template's system message
    assertThat(
            text.chatTemplate().orElseThrow().render(List.of(new Message("developer", "X")), true))
        .startsWith("<|im_start|>system\nX<|im_end|>\n");
  }

  @Test
  void llama2FoldsTheSystemIntoTheFirstTurnAndClosesTurnsWithEos() throws IOException {
    GgufText text = open("llama-spm", LLAMA2);
    List<Message> chat =
        List.of(
            new Message("system", "Be brief."),
            new Message("user", " Hi "),
            new Message("assistant", "Hello"),
            new Message("user", "Bye"));

    assertThat(text.chatTemplate().orElseThrow().render(chat, true))
        .isEqualTo(
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello </s><s>[INST] Bye"
                + " [/INST]");
    // <s> 1 (the first dropped: the tokenizer adds BOS), </s> 2; SentencePiece puts a space
    // before the text after each special token, as the tokenizer of a lone text does
    Tokenizer t = text.tokenizer();
    assertThat(text.chat(chat))
        .containsExactly(
            ids(
                t,
                1,
                "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello ",
                2,
                1,
                "[INST] Bye [/INST]"));
    assertThatThrownBy(() -> text.chat(List.of(new Message("user", "a"), new Message("user", "b"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("Conversation roles must alternate user/assistant/user/assistant/...");
  }

  @Test
  void oneTrailingNewlineOfTheSourceIsDroppedAsJinjaDoes() {
    JinjaChatTemplate template = new JinjaChatTemplate("{{ bos_token }}x\n\n", "<s>", "</s>");

    assertThat(template.render(List.of(), true)).isEqualTo("<s>x\n");
  }

  @Test
  void pythonStringMethodsHaveTheirPythonMeaning() {
    JinjaChatTemplate template =
        new JinjaChatTemplate(
            "{% set c = messages[0]['content'] %}{{ c.startswith('<think>') }}|{{"
                + " c.endswith(('x', 'answer')) }}|{{ c.split('</think>')[-1].lstrip() }}|{{"
                + " 'a.b'.split('.') | length }}|{{ '  a  b '.split() | join(',') }}|{{"
                + " 'xxhixx'.strip('x') }}|{{ 'hi'.upper() }}|{{ 'hello world'.title() }}|{{"
                + " '-'.join(['a', 'b']) }}|{{ c.find('</think>') }}",
            "", "");

    assertThat(template.render(List.of(new Message("user", "<think>hm</think> answer")), true))
        .isEqualTo("true|true|answer|2|a,b|hi|HI|Hello World|a-b|9");
  }

  @Test
  void aTemplateJinjavaCannotRenderIsTheServersFaultNamingTheMethod() throws IOException {
    GgufText text = open("qwen2", "{{ messages[0]['content'].zfill(3) }}");

    assertThatThrownBy(() -> text.chat(List.of(new Message("user", "abc"))))
        .isInstanceOf(ChatTemplateException.class)
        .hasMessageContaining("zfill");
  }
}
