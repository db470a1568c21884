package io.kvtier.gguf.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Decodes ids one at a time, for text that streams as a model generates it. A token's text is
 * bytes (a byte-level BPE piece, or a SentencePiece byte-fallback token {@code <0xE6>} that is a
 * third of a character), so the decoder holds back the bytes of a character not yet complete and
 * hands them out with the token that completes it. {@link Tokenizer#decode} is this decoder run
 * over all the ids, so the pieces joined always equal the whole decoding. Not thread-safe: one per
 * sequence.
 */
public final class StreamingDecoder {

  /** A tokenizer's bytes of one token. */
  @FunctionalInterface
  interface Pieces {
    /**
     * Writes the bytes of {@code id}.
     *
     * @param stripSpace whether a leading space of the piece is dropped (SentencePiece's first
     *     text piece, whose space encoding put there)
     * @return whether the next piece's leading space is dropped
     */
    boolean write(int id, boolean stripSpace, ByteArrayOutputStream out);
  }

  private final Pieces pieces;
  private final CharsetDecoder utf8 =
      StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPLACE)
          .onUnmappableCharacter(CodingErrorAction.REPLACE);
  private final ByteArrayOutputStream piece = new ByteArrayOutputStream();
  private byte[] heldBack = new byte[0];
  private boolean stripSpace;

  StreamingDecoder(Pieces pieces, boolean stripFirstSpace) {
    this.pieces = pieces;
    this.stripSpace = stripFirstSpace;
  }

  /**
   * Adds one id.
   *
   * @param id a token id of the vocabulary
   * @return the text it completes, maybe empty
   * @throws IndexOutOfBoundsException if {@code id} is outside the vocabulary
   */
  public String add(int id) {
    piece.reset();
    piece.writeBytes(heldBack);
    stripSpace = pieces.write(id, stripSpace, piece);
    return drain(false);
  }

  /**
   * The bytes of one id alone, as it would add them in the middle of a text (its leading space
   * kept): a byte-fallback token's one byte, which may be part of a character. Leaves the
   * sequence's state as it was.
   *
   * @param id a token id of the vocabulary
   * @return its bytes, maybe none
   * @throws IndexOutOfBoundsException if {@code id} is outside the vocabulary
   */
  public byte[] bytesOf(int id) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    pieces.write(id, false, out);
    return out.toByteArray();
  }

  /**
   * Ends the sequence: held-back bytes that never formed a character become U+FFFD.
   *
   * @return the rest of the text, maybe empty
   */
  public String finish() {
    piece.reset();
    piece.writeBytes(heldBack);
    String rest = drain(true);
    utf8.reset();
    return rest;
  }

  private String drain(boolean endOfInput) {
    ByteBuffer in = ByteBuffer.wrap(piece.toByteArray());
    CharBuffer out = CharBuffer.allocate(in.remaining() + 2);
    utf8.decode(in, out, endOfInput);
    if (endOfInput) {
      utf8.flush(out);
    }
    heldBack = Arrays.copyOfRange(in.array(), in.position(), in.limit());
    return out.flip().toString();
  }
}
