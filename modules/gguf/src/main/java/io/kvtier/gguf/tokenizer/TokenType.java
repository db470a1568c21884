package io.kvtier.gguf.tokenizer;

/**
 * A token's kind as {@code tokenizer.ggml.token_type} stores it (llama.cpp's codes 1 to 6).
 * Control tokens ({@code <s>}, {@code <|im_start|>}) are matched in text only when the caller asks
 * for special tokens; user-defined tokens are always matched; byte tokens ({@code <0x0A>}) are
 * SentencePiece's fallback for characters outside the vocabulary.
 */
public enum TokenType {
  /** An ordinary piece of text. */
  NORMAL,
  /** The unknown token. */
  UNKNOWN,
  /** A control token: rendered as nothing unless special tokens are asked for. */
  CONTROL,
  /** A user-defined token, matched in text as a whole. */
  USER_DEFINED,
  /** An unused slot. */
  UNUSED,
  /** One byte, written {@code <0xXX>}. */
  BYTE;

  /** The type for GGUF code {@code code}; codes outside 1..6 (including 0) count as normal. */
  public static TokenType ofCode(int code) {
    return switch (code) {
      case 2 -> UNKNOWN;
      case 3 -> CONTROL;
      case 4 -> USER_DEFINED;
      case 5 -> UNUSED;
      case 6 -> BYTE;
      default -> NORMAL;
    };
  }
}
