package io.kvtier.gguf.tokenizer;

import io.kvtier.gguf.GgufFile;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.PriorityQueue;

/**
 * SentencePiece as llama.cpp runs it for {@code tokenizer.ggml.model = "llama"}: spaces become
 * {@code ▁}, a space is put before the text (and after each special token) when
 * {@code tokenizer.ggml.add_space_prefix} is true (the default), adjacent pieces are merged
 * highest score first (leftmost on ties) while the merged text is a token, and characters left
 * outside the vocabulary fall back to byte tokens {@code <0xXX>}.
 *
 * <p>Merging keeps candidate pairs in a priority queue and skips stale ones, so a text of n
 * characters costs O(n log n), not O(n^2).
 */
public final class SentencePieceTokenizer implements Tokenizer {
  private static final String SPACE = "\u2581";

  private final Vocabulary vocabulary;
  private final boolean addSpacePrefix;
  private final int[] byteTokens = new int[256];

  SentencePieceTokenizer(Vocabulary vocabulary, boolean addSpacePrefix) {
    this.vocabulary = vocabulary;
    this.addSpacePrefix = addSpacePrefix;
    for (int b = 0; b < 256; b++) {
      int id = vocabulary.id(String.format("<0x%02X>", b));
      if (id < 0 && b < 128) {
        id = vocabulary.id(String.valueOf((char) b));
      }
      byteTokens[b] = id >= 0 ? id : vocabulary.unknown().orElse(-1);
    }
  }

  static SentencePieceTokenizer of(GgufFile file) {
    return new SentencePieceTokenizer(
        Vocabulary.of(file, true), file.getBoolean("tokenizer.ggml.add_space_prefix", true));
  }

  @Override
  public Vocabulary vocabulary() {
    return vocabulary;
  }

  @Override
  public int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
    IntList out = new IntList();
    if (addSpecial && vocabulary.addBos() && vocabulary.bos().isPresent()) {
      out.add(vocabulary.bos().getAsInt());
    }
    boolean previousSpecial = true;
    for (Vocabulary.Fragment fragment : vocabulary.partition(text, parseSpecial)) {
      if (fragment.token() >= 0) {
        out.add(fragment.token());
        previousSpecial = true;
        continue;
      }
      String raw = addSpacePrefix && previousSpecial ? " " + fragment.text() : fragment.text();
      tokenize(raw.replace(" ", SPACE), out);
      previousSpecial = false;
    }
    if (addSpecial && vocabulary.addEos() && vocabulary.eos().isPresent()) {
      out.add(vocabulary.eos().getAsInt());
    }
    return out.toArray();
  }

  /** A candidate merge of two adjacent symbols, ordered by score (higher first), then left. */
  private record Bigram(int left, int right, float score, int length) {}

  private void tokenize(String text, IntList out) {
    // symbols are code-point runs [start[i], start[i] + length[i]) linked by prev/next
    int n = text.codePointCount(0, text.length());
    int[] start = new int[n];
    int[] length = new int[n];
    int[] prev = new int[n];
    int[] next = new int[n];
    for (int i = 0, at = 0; i < n; i++) {
      int cp = text.codePointAt(at);
      start[i] = at;
      length[i] = Character.charCount(cp);
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
      at += length[i];
    }
    PriorityQueue<Bigram> queue =
        new PriorityQueue<>(
            (a, b) ->
                a.score != b.score
                    ? Float.compare(b.score, a.score)
                    : Integer.compare(a.left, b.left));
    for (int i = 1; i < n; i++) {
      offer(text, start, length, i - 1, i, queue);
    }
    while (!queue.isEmpty()) {
      Bigram bigram = queue.poll();
      int left = bigram.left;
      int right = bigram.right;
      if (length[left] == 0
          || length[right] == 0
          || length[left] + length[right] != bigram.length) {
        continue; // stale: one side was merged since
      }
      length[left] += length[right];
      length[right] = 0;
      next[left] = next[right];
      if (next[right] >= 0) {
        prev[next[right]] = left;
      }
      if (prev[left] >= 0) {
        offer(text, start, length, prev[left], left, queue);
      }
      if (next[left] >= 0) {
        offer(text, start, length, left, next[left], queue);
      }
    }
    for (int i = 0; i >= 0 && n > 0; i = next[i]) {
      String piece = text.substring(start[i], start[i] + length[i]);
      int id = vocabulary.id(piece);
      if (id >= 0) {
        out.add(id);
        continue;
      }
      for (byte b : piece.getBytes(StandardCharsets.UTF_8)) {
        out.add(byteTokens[b & 0xFF]);
      }
    }
  }

  private void offer(
      String text, int[] start, int[] length, int left, int right, PriorityQueue<Bigram> queue) {
    int merged = length[left] + length[right];
    int id = vocabulary.id(text.substring(start[left], start[left] + merged));
    if (id >= 0) {
      queue.add(new Bigram(left, right, vocabulary.score(id), merged));
    }
  }

  @Override
  public String decode(int[] ids, boolean renderSpecial) {
    StreamingDecoder decoder = decoder(renderSpecial);
    StringBuilder text = new StringBuilder();
    for (int id : ids) {
      text.append(decoder.add(id));
    }
    return text.append(decoder.finish()).toString();
  }

  /**
   * {@inheritDoc}
   *
   * <p>The first text piece loses its leading space, as does the first after a control or
   * user-defined token, since encoding put one there (with {@code add_space_prefix}); so does
   * Hugging Face's decoding of a SentencePiece sequence.
   */
  @Override
  public StreamingDecoder decoder(boolean renderSpecial, boolean startOfText) {
    return new StreamingDecoder(
        (id, stripSpace, bytes) -> writePiece(id, renderSpecial, stripSpace, bytes),
        addSpacePrefix && startOfText);
  }

  private boolean writePiece(
      int id, boolean renderSpecial, boolean stripSpace, ByteArrayOutputStream bytes) {
    String piece;
    switch (vocabulary.type(id)) {
      case BYTE -> {
        bytes.write(Integer.parseInt(vocabulary.text(id), 3, 5, 16));
        return false;
      }
      case CONTROL -> {
        if (renderSpecial) {
          bytes.writeBytes(vocabulary.text(id).getBytes(StandardCharsets.UTF_8));
        }
        return addSpacePrefix; // encode put a space after each special token
      }
      case USER_DEFINED -> {
        bytes.writeBytes(vocabulary.text(id).getBytes(StandardCharsets.UTF_8));
        return addSpacePrefix;
      }
      case UNKNOWN -> piece = renderSpecial ? vocabulary.text(id) : "\u2585";
      default -> piece = vocabulary.text(id).replace(SPACE, " ");
    }
    if (stripSpace && piece.startsWith(" ")) {
      piece = piece.substring(1);
    }
    bytes.writeBytes(piece.getBytes(StandardCharsets.UTF_8));
    return false;
  }

  @Override
  public String describe() {
    return "SentencePiece, " + vocabulary.size() + " tokens";
  }
}
