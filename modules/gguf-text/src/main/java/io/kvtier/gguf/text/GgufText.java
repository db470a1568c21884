package io.kvtier.gguf.text;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.tokenizer.StreamingDecoder;
import io.kvtier.gguf.tokenizer.TokenType;
import io.kvtier.gguf.tokenizer.Tokenizer;
import io.kvtier.gguf.tokenizer.Vocabulary;
import io.kvtier.serving.ModelText;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * A GGUF file's text as a served model's {@link ModelText}, following llama.cpp's server:
 *
 * <ul>
 *   <li>a completion's text prompt is tokenized with the file's special tokens added (BOS first
 *       where {@code tokenizer.ggml.add_bos_token} says so, or the tokenizer's default when the key
 *       is absent: true for SentencePiece and Llama 3, false otherwise; EOS last where {@code
 *       add_eos_token} says so) and special tokens written in it parsed to their ids;
 *   <li>a chat is rendered by the file's {@code tokenizer.chat_template} ({@link
 *       JinjaChatTemplate}), a leading BOS text (and a trailing EOS text) the template wrote is
 *       dropped where the file adds that token itself, so a prompt never starts with two BOS, and
 *       the text is tokenized as a prompt is: {@code <|im_start|>} or {@code <|start_header_id|>}
 *       become their single ids;
 *   <li>a file without a template is taken as a base model (such as stories260K): the chat prompt
 *       is the messages' contents joined by a newline, with the file's special tokens added and
 *       nothing parsed as a special token, so the model continues the text;
 *   <li>generation ends at the vocabulary's end-of-generation tokens, llama.cpp's EOG set: EOS,
 *       {@code tokenizer.ggml.eot_token_id} and {@code eom_token_id}, and the tokens it knows by
 *       text ({@code <|eot_id|>}, {@code <|im_end|>}, {@code <|endoftext|>}, ...); control tokens
 *       decode as nothing.
 * </ul>
 *
 * <p>Immutable and thread-safe; it keeps no reference to the file.
 */
public final class GgufText implements ModelText {
  private final String name;
  private final Tokenizer tokenizer;
  private final ChatFormat chat;
  private final Set<Integer> endOfGeneration;

  private GgufText(String name, Tokenizer tokenizer, ChatFormat chat) {
    if (name.isBlank()) {
      throw new IllegalArgumentException("the model's name is blank: give one");
    }
    this.name = name;
    this.tokenizer = tokenizer;
    this.chat = chat;
    this.endOfGeneration =
        Arrays.stream(tokenizer.vocabulary().endOfGenerationIds())
            .boxed()
            .collect(Collectors.toUnmodifiableSet());
  }

  /**
   * The text of a file, named after it ({@code llama-3.2-1b.gguf} is {@code llama-3.2-1b}).
   *
   * @param file an open GGUF file with {@code tokenizer.ggml.*} metadata
   * @return the text
   * @throws io.kvtier.gguf.GgufException if the tokenizer is missing or unsupported
   */
  public static GgufText of(GgufFile file) {
    String fileName = file.path().getFileName().toString();
    String name =
        fileName.toLowerCase(java.util.Locale.ROOT).endsWith(".gguf")
            ? fileName.substring(0, fileName.length() - ".gguf".length())
            : fileName;
    return of(file, name);
  }

  /**
   * The text of a file under a name.
   *
   * @param file an open GGUF file with {@code tokenizer.ggml.*} metadata
   * @param name the model's name
   * @return the text
   */
  public static GgufText of(GgufFile file, String name) {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(name, "name");
    Tokenizer tokenizer = Tokenizer.of(file);
    Optional<String> template =
        file.has("tokenizer.chat_template")
            ? Optional.of(file.getString("tokenizer.chat_template"))
            : Optional.empty();
    return new GgufText(name, tokenizer, format(tokenizer, template));
  }

  private static ChatFormat format(Tokenizer tokenizer, Optional<String> template) {
    if (template.isEmpty() || template.get().isBlank()) {
      return new ContentsOnly();
    }
    Vocabulary v = tokenizer.vocabulary();
    return new Templated(
        new JinjaChatTemplate(
            template.get(),
            v.bos().stream().mapToObj(v::text).findFirst().orElse(""),
            v.eos().stream().mapToObj(v::text).findFirst().orElse("")),
        v);
  }

  @Override
  public String name() {
    return name;
  }

  /** The file's tokenizer. */
  public Tokenizer tokenizer() {
    return tokenizer;
  }

  /** The file's chat template, or empty where it has none (the contents-only fallback). */
  public Optional<JinjaChatTemplate> chatTemplate() {
    return chat instanceof Templated t ? Optional.of(t.template()) : Optional.empty();
  }

  @Override
  public int[] encode(String text) {
    return tokenizer.encode(text, true, true);
  }

  @Override
  public int[] chat(List<Message> messages) {
    return tokenizer.encode(chat.render(messages), true, chat.writesSpecialTokens());
  }

  /**
   * {@inheritDoc}
   *
   * <p>A completion's prompt "has no text before" the sequence where it is empty or ends in a
   * control or user-defined token (BOS alone, say), after which SentencePiece's decoding drops a
   * piece's leading space. Ids outside the tokenizer's vocabulary (a model whose output rows pad
   * the vocabulary) decode as nothing.
   */
  @Override
  public Decoder decoder(int[] prompt, boolean reply) {
    int size = tokenizer.vocabulary().size();
    boolean startOfText = reply || prompt.length == 0 || special(prompt[prompt.length - 1]);
    StreamingDecoder decoder = tokenizer.decoder(false, startOfText);
    return new Decoder() {
      @Override
      public String add(int token) {
        return token >= 0 && token < size ? decoder.add(token) : "";
      }

      @Override
      public String finish() {
        return decoder.finish();
      }
    };
  }

  @Override
  public byte[] tokenBytes(int token) {
    return token >= 0 && token < tokenizer.vocabulary().size()
        ? tokenizer.tokenBytes(token)
        : new byte[0];
  }

  private boolean special(int token) {
    if (token < 0 || token >= tokenizer.vocabulary().size()) {
      return false;
    }
    TokenType type = tokenizer.vocabulary().type(token);
    return type == TokenType.CONTROL || type == TokenType.USER_DEFINED;
  }

  @Override
  public Set<Integer> endOfGeneration() {
    return endOfGeneration;
  }

  @Override
  public String toString() {
    return name
        + ": "
        + tokenizer.describe()
        + ", "
        + (chat instanceof Templated ? "chat template" : "no chat template (contents only)");
  }

  /** How a conversation becomes the text that is tokenized. */
  private sealed interface ChatFormat permits Templated, ContentsOnly {
    String render(List<Message> messages);

    /** Whether the text holds special tokens written as text, to parse to their ids. */
    boolean writesSpecialTokens();
  }

  /** The file's template; the BOS (EOS) text it writes is dropped where the tokenizer adds it. */
  private record Templated(JinjaChatTemplate template, Vocabulary vocabulary)
      implements ChatFormat {
    @Override
    public String render(List<Message> messages) {
      String text = template.render(messages, true);
      if (vocabulary.addBos() && vocabulary.bos().isPresent()) {
        String bos = vocabulary.text(vocabulary.bos().getAsInt());
        if (text.startsWith(bos)) {
          text = text.substring(bos.length());
        }
      }
      if (vocabulary.addEos() && vocabulary.eos().isPresent()) {
        String eos = vocabulary.text(vocabulary.eos().getAsInt());
        if (text.endsWith(eos)) {
          text = text.substring(0, text.length() - eos.length());
        }
      }
      return text;
    }

    @Override
    public boolean writesSpecialTokens() {
      return true;
    }
  }

  /** No template: the contents joined by a newline, as a base model's text to continue. */
  private record ContentsOnly() implements ChatFormat {
    @Override
    public String render(List<Message> messages) {
      return messages.stream().map(Message::content).collect(Collectors.joining("\n"));
    }

    @Override
    public boolean writesSpecialTokens() {
      return false;
    }
  }
}
