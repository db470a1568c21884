package io.kvtier.gguf.tokenizer;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufMetadataException;
import io.kvtier.gguf.GgufUnsupportedException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Byte-level BPE as llama.cpp runs it for {@code tokenizer.ggml.model = "gpt2"}: the
 * pre-tokenizer splits text into words, each word's UTF-8 bytes are written as GPT-2's printable
 * byte characters, and adjacent symbols are merged lowest merge rank first (leftmost on ties)
 * from {@code tokenizer.ggml.merges}. Llama 3 takes a word that is a token whole.
 *
 * <p>Merging keeps candidate pairs in a priority queue and skips stale ones: O(n log n) per
 * word.
 */
public final class BytePairTokenizer implements Tokenizer {
  /** GPT-2's byte-to-character table: printable bytes map to themselves, others to 256 and up. */
  private static final char[] BYTE_TO_CHAR = new char[256];

  private static final int[] CHAR_TO_BYTE = new int[512];

  static {
    Arrays.fill(CHAR_TO_BYTE, -1);
    int extra = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE;
      BYTE_TO_CHAR[b] = (char) (printable ? b : 256 + extra++);
      CHAR_TO_BYTE[BYTE_TO_CHAR[b]] = b;
    }
  }

  private final Vocabulary vocabulary;
  private final PreTokenizer preTokenizer;
  private final Map<String, Integer> mergeRanks;

  BytePairTokenizer(Vocabulary vocabulary, PreTokenizer preTokenizer, String[] merges) {
    this.vocabulary = vocabulary;
    this.preTokenizer = preTokenizer;
    this.mergeRanks = HashMap.newHashMap(merges.length);
    for (int rank = 0; rank < merges.length; rank++) {
      String merge = merges[rank];
      // llama.cpp splits at the first space after the first character and keeps the first rank
      // of a pair; byte-level symbols hold no space, so "left right" names the pair exactly
      if (merge.indexOf(' ', 1) > 0) {
        mergeRanks.putIfAbsent(merge, rank);
      }
    }
  }

  static BytePairTokenizer of(GgufFile file) {
    String pre = file.getString("tokenizer.ggml.pre", "default");
    PreTokenizer preTokenizer = PreTokenizer.byName(pre);
    if (preTokenizer == null) {
      throw new GgufUnsupportedException(
          file.path()
              + ": tokenizer.ggml.pre '"
              + pre
              + "' is not supported; supported: "
              + PreTokenizer.supportedNames());
    }
    if (!file.has("tokenizer.ggml.merges")) {
      throw new GgufMetadataException(
          "tokenizer.ggml.merges",
          "metadata key"
              + " 'tokenizer.ggml.merges' is missing from "
              + file.path()
              + " (a BPE tokenizer needs it)");
    }
    boolean defaultAddBos = preTokenizer == PreTokenizer.LLAMA3;
    return new BytePairTokenizer(
        Vocabulary.of(file, defaultAddBos),
        preTokenizer,
        file.getArray("tokenizer.ggml.merges").strings());
  }

  @Override
  public Vocabulary vocabulary() {
    return vocabulary;
  }

  /** The pre-tokenizer the file names. */
  public PreTokenizer preTokenizer() {
    return preTokenizer;
  }

  @Override
  public int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
    IntList out = new IntList();
    if (addSpecial && vocabulary.addBos() && vocabulary.bos().isPresent()) {
      out.add(vocabulary.bos().getAsInt());
    }
    for (Vocabulary.Fragment fragment : vocabulary.partition(text, parseSpecial)) {
      if (fragment.token() >= 0) {
        out.add(fragment.token());
        continue;
      }
      for (String word : preTokenizer.split(fragment.text())) {
        tokenizeWord(toByteChars(word), out);
      }
    }
    if (addSpecial && vocabulary.addEos() && vocabulary.eos().isPresent()) {
      out.add(vocabulary.eos().getAsInt());
    }
    return out.toArray();
  }

  private static String toByteChars(String word) {
    byte[] bytes = word.getBytes(StandardCharsets.UTF_8);
    char[] chars = new char[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      chars[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
    }
    return new String(chars);
  }

  /** A candidate merge of two adjacent symbols: lowest rank first, then leftmost. */
  private record Bigram(int left, int right, int rank, int length) {}

  private void tokenizeWord(String word, IntList out) {
    if (preTokenizer.ignoreMerges()) {
      int whole = vocabulary.id(word);
      if (whole >= 0) {
        out.add(whole);
        return;
      }
    }
    // every byte character is one UTF-16 unit, so symbol i starts at char i
    int n = word.length();
    int[] length = new int[n];
    int[] prev = new int[n];
    int[] next = new int[n];
    for (int i = 0; i < n; i++) {
      length[i] = 1;
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    PriorityQueue<Bigram> queue =
        new PriorityQueue<>(
            (a, b) ->
                a.rank != b.rank
                    ? Integer.compare(a.rank, b.rank)
                    : Integer.compare(a.left, b.left));
    for (int i = 1; i < n; i++) {
      offer(word, length, i - 1, i, queue);
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
        offer(word, length, prev[left], left, queue);
      }
      if (next[left] >= 0) {
        offer(word, length, left, next[left], queue);
      }
    }
    for (int i = 0; i >= 0 && n > 0; i = next[i]) {
      String piece = word.substring(i, i + length[i]);
      int id = vocabulary.id(piece);
      if (id >= 0) {
        out.add(id);
        continue;
      }
      for (int c = 0; c < piece.length(); c++) {
        int single = vocabulary.id(piece.substring(c, c + 1));
        if (single >= 0) {
          out.add(single);
        }
      }
    }
  }

  private void offer(String word, int[] length, int left, int right, PriorityQueue<Bigram> queue) {
    String key =
        word.substring(left, left + length[left])
            + ' '
            + word.substring(right, right + length[right]);
    Integer rank = mergeRanks.get(key);
    if (rank != null) {
      queue.add(new Bigram(left, right, rank, length[left] + length[right]));
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

  /** Byte-level BPE keeps every space: {@code startOfText} changes nothing. */
  @Override
  public StreamingDecoder decoder(boolean renderSpecial, boolean startOfText) {
    return new StreamingDecoder(
        (id, stripSpace, bytes) -> {
          writePiece(id, renderSpecial, bytes);
          return false;
        },
        false);
  }

  private void writePiece(int id, boolean renderSpecial, ByteArrayOutputStream bytes) {
    String text = vocabulary.text(id);
    switch (vocabulary.type(id)) {
      case CONTROL, UNKNOWN, UNUSED -> {
        if (renderSpecial) {
          bytes.writeBytes(text.getBytes(StandardCharsets.UTF_8));
        }
      }
      case USER_DEFINED -> bytes.writeBytes(text.getBytes(StandardCharsets.UTF_8));
      default -> {
        for (int i = 0; i < text.length(); ) {
          int cp = text.codePointAt(i);
          int b = cp < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[cp] : -1;
          if (b >= 0) {
            bytes.write(b);
          } else {
            bytes.writeBytes(Character.toString(cp).getBytes(StandardCharsets.UTF_8));
          }
          i += Character.charCount(cp);
        }
      }
    }
  }

  @Override
  public String describe() {
    return "byte-level BPE (" + preTokenizer.ggufName() + "), " + vocabulary.size() + " tokens";
  }
}
