package io.kvtier.serving;

import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The text side of a served model: its name, its tokenizer and its chat template. The HTTP server
 * turns a completion's text prompt ({@link #encode}) and a chat's messages ({@link #chat}) into
 * prompt tokens through it, and the generated tokens back into text ({@link #decoder}), ending a
 * reply at the model's end-of-generation tokens ({@link #endOfGeneration}, {@link #endOfReply}).
 * A prompt given as token ids never passes through it: the ids are taken exactly as given, as
 * vLLM and llama.cpp take them.
 *
 * <p>A model without a tokenizer serves token ids only: {@link #tokensOnly} is its text, whose
 * encoding calls fail with {@link TextUnavailableException}. Implementations are immutable and
 * thread-safe; a {@link Decoder} is not, and serves one sequence.
 */
public interface ModelText {

  /**
   * The model's own name, which {@code /v1/models} reports (as its {@code root}; the served id
   * may be another name the server is given).
   *
   * @return a non-blank name
   */
  String name();

  /**
   * The prompt tokens of a completion's text prompt, with the special tokens the model's rules
   * add (BOS first where the model asks for it).
   *
   * @param text the prompt's text
   * @return the token ids, maybe empty for an empty text
   * @throws TextUnavailableException if the model has no tokenizer
   */
  int[] encode(String text);

  /**
   * The prompt tokens of a conversation under the model's chat template, ending where the
   * assistant's reply starts (the template's generation prompt added).
   *
   * @param messages the messages, in order; roles {@code system}, {@code developer}, {@code user}
   *     or {@code assistant}
   * @return the token ids
   * @throws TextUnavailableException if the model has no tokenizer
   * @throws IllegalArgumentException if the template refuses the conversation (for example roles
   *     that do not alternate), with the template's reason
   */
  int[] chat(List<Message> messages);

  /**
   * A decoder for one generated sequence.
   *
   * @param prompt the prompt the sequence follows
   * @param reply true for a chat reply, a text of its own (a SentencePiece model drops the
   *     leading space of its first piece, as decoding a whole text does); false for a completion,
   *     whose text continues the prompt's: the space is kept (as llama.cpp and vLLM keep it)
   *     unless the prompt has no text before it (as decoding prompt and completion together
   *     would drop it)
   * @return a new decoder
   */
  Decoder decoder(int[] prompt, boolean reply);

  /**
   * The bytes one token stands for alone, in the middle of a text, special tokens as their text:
   * how a client is shown a token and its alternatives (OpenAI's log-probabilities). A token that
   * is part of a character (a byte of UTF-8) gives that byte. The default, for a model without a
   * tokenizer, is null: the server then names the token {@code token_id:N}.
   *
   * @param token a token id of the vocabulary
   * @return its bytes, or null where the model has no text
   */
  default byte[] tokenBytes(int token) {
    return null;
  }

  /**
   * The tokens that end any generation (a completion's too): the model has finished its text,
   * such as EOS. The token itself adds no text.
   *
   * @return the ids, maybe none
   */
  Set<Integer> endOfGeneration();

  /**
   * The tokens that end a chat reply: {@link #endOfGeneration()} and the chat template's end of a
   * turn where the template has one of its own. The default is {@link #endOfGeneration()}.
   *
   * @return the ids
   */
  default Set<Integer> endOfReply() {
    return endOfGeneration();
  }

  /**
   * The text of a model that has no tokenizer: it serves prompts of token ids, answers with
   * their ids and no text, and refuses text prompts and chats with a {@link
   * TextUnavailableException} that says so.
   *
   * @param modelName the model's name
   * @return the text
   */
  static ModelText tokensOnly(String modelName) {
    return new TokensOnlyText(modelName);
  }

  /**
   * A chat message's role and text.
   *
   * @param role {@code system}, {@code developer}, {@code user} or {@code assistant}
   * @param content the text
   */
  record Message(String role, String content) {
    /** Validates the fields. */
    public Message {
      Objects.requireNonNull(role, "role");
      Objects.requireNonNull(content, "content");
    }
  }

  /**
   * Turns the generated tokens of one sequence into text as they come. Each call returns only
   * text that is final: the bytes of a character not yet complete (a UTF-8 sequence, or a run of
   * byte-fallback tokens) are held back until a later token completes them. The pieces joined
   * equal the decoding of the whole sequence at once. Not thread-safe.
   */
  interface Decoder {
    /**
     * Adds one generated token.
     *
     * @param token the id
     * @return the text now final, maybe empty
     */
    String add(int token);

    /**
     * Ends the sequence: bytes of an unfinished character become U+FFFD.
     *
     * @return the text still held back, maybe empty
     */
    String finish();
  }

  /** The model has no tokenizer: it serves token ids only. */
  final class TextUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was asked and what to send instead
     */
    public TextUnavailableException(String message) {
      super(message);
    }
  }
}
