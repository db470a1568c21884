package io.kvtier.gguf.tokenizer;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufUnsupportedException;

/**
 * Turns text into token ids and back, as llama.cpp does for the same GGUF file.
 *
 * <p>{@link #of} reads {@code tokenizer.ggml.model}: {@code llama} is SentencePiece with scores
 * and byte fallback ({@link SentencePieceTokenizer}), {@code gpt2} is byte-level BPE with merges
 * and the pre-tokenizer {@code tokenizer.ggml.pre} names ({@link BytePairTokenizer}).
 *
 * <p>A tokenizer copies what it needs from the file (it outlives the {@link GgufFile}), holds no
 * mutable state, and is safe for concurrent use.
 */
public sealed interface Tokenizer permits SentencePieceTokenizer, BytePairTokenizer {

  /**
   * The tokenizer {@code file}'s metadata describes.
   *
   * @throws GgufUnsupportedException naming the model or pre-tokenizer and the supported ones
   */
  static Tokenizer of(GgufFile file) {
    String model = file.getString("tokenizer.ggml.model");
    return switch (model) {
      case "llama" -> SentencePieceTokenizer.of(file);
      case "gpt2" -> BytePairTokenizer.of(file);
      default ->
          throw new GgufUnsupportedException(
              file.path()
                  + ": tokenizer.ggml.model '"
                  + model
                  + "' is not supported; supported: llama (SentencePiece), gpt2 (byte-level BPE)");
    };
  }

  /** The vocabulary: token texts, types, special ids and the BOS/EOS flags. */
  Vocabulary vocabulary();

  /**
   * The ids of {@code text}. With {@code addSpecial}, BOS comes first and EOS last where the
   * file's flags say so. User-defined tokens are matched in the text; control tokens are not.
   */
  default int[] encode(String text, boolean addSpecial) {
    return encode(text, addSpecial, false);
  }

  /**
   * The ids of {@code text}; with {@code parseSpecial} control tokens written in the text (such
   * as {@code <|im_start|>}) become their ids, as llama.cpp's {@code parse_special}.
   */
  int[] encode(String text, boolean addSpecial, boolean parseSpecial);

  /** The text of {@code ids}; control tokens render as nothing. */
  default String decode(int[] ids) {
    return decode(ids, false);
  }

  /** The text of {@code ids}; with {@code renderSpecial} control tokens render as their text. */
  String decode(int[] ids, boolean renderSpecial);

  /**
   * A decoder of one sequence, id by id, whose pieces joined equal {@link #decode(int[],
   * boolean)} of all the ids: it holds back the bytes of a character not yet complete.
   */
  default StreamingDecoder decoder(boolean renderSpecial) {
    return decoder(renderSpecial, true);
  }

  /**
   * A decoder of one sequence, id by id.
   *
   * @param startOfText true where the ids start a text (as {@link #decode} takes them: a
   *     SentencePiece vocabulary that puts a space before a text drops the first piece's leading
   *     space); false where they continue a text already there (generated after a prompt), whose
   *     spaces are all kept
   */
  StreamingDecoder decoder(boolean renderSpecial, boolean startOfText);

  /**
   * The bytes of one token in the middle of a text, control tokens as their text: what a token
   * stands for where a client is shown tokens one by one (OpenAI's log-probabilities).
   *
   * @param id a token id of the vocabulary
   * @return its bytes, maybe not a whole UTF-8 character
   */
  default byte[] tokenBytes(int id) {
    return decoder(true, false).bytesOf(id);
  }

  /** A one-line description for startup lines: kind, vocabulary size, pre-tokenizer. */
  String describe();
}
