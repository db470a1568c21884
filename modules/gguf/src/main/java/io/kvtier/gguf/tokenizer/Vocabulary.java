package io.kvtier.gguf.tokenizer;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufMetadataException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A tokenizer's vocabulary from a GGUF file's {@code tokenizer.ggml.*} metadata: token texts,
 * types and scores, the special ids and flags, and the splitting of text around special tokens
 * (llama.cpp's {@code tokenizer_st_partition}).
 */
public final class Vocabulary {
  private final String[] tokens;
  private final TokenType[] types;
  private final float[] scores;
  private final Map<String, Integer> ids;
  private final OptionalInt bos;
  private final OptionalInt eos;
  private final OptionalInt unknown;
  private final boolean addBos;
  private final boolean addEos;

  /** Control, user-defined and unknown tokens, longest text first. */
  private final int[] specials;

  private final BitSet endOfGeneration;

  /**
   * Token texts that end a generation wherever they appear in a vocabulary, as llama.cpp
   * detects them ({@code special_eog_ids}): files often name only EOS, not the end of a turn.
   */
  private static final Set<String> END_OF_GENERATION_TEXTS =
      Set.of(
          "<|eot_id|>",
          "<|im_end|>",
          "<|end|>",
          "<|return|>",
          "<|call|>",
          "<end_of_turn>",
          "<|endoftext|>",
          "<|eom_id|>",
          "<EOT>",
          "_<EOT>",
          "<|end_of_text|>",
          "<end_of_utterance>");

  Vocabulary(
      String[] tokens,
      TokenType[] types,
      float[] scores,
      OptionalInt bos,
      OptionalInt eos,
      OptionalInt unknown,
      boolean addBos,
      boolean addEos,
      int[] extraEndOfGeneration) {
    this.tokens = tokens;
    this.types = types;
    this.scores = scores;
    this.bos = bos;
    this.eos = eos;
    this.unknown = unknown;
    this.addBos = addBos;
    this.addEos = addEos;
    this.ids = HashMap.newHashMap(tokens.length);
    for (int i = 0; i < tokens.length; i++) {
      ids.put(tokens[i], i); // as llama.cpp: a text given twice means its last id
    }
    List<Integer> special = new ArrayList<>();
    for (int i = 0; i < tokens.length; i++) {
      if ((types[i] == TokenType.CONTROL
              || types[i] == TokenType.USER_DEFINED
              || types[i] == TokenType.UNKNOWN)
          && !tokens[i].isEmpty()) {
        special.add(i);
      }
    }
    special.sort(
        Comparator.comparingInt((Integer i) -> -utf8Length(tokens[i])).thenComparingInt(i -> i));
    this.specials = special.stream().mapToInt(Integer::intValue).toArray();
    this.endOfGeneration = new BitSet(tokens.length);
    eos.ifPresent(endOfGeneration::set);
    for (int id : extraEndOfGeneration) {
      endOfGeneration.set(id);
    }
    for (String text : END_OF_GENERATION_TEXTS) {
      Integer id = ids.get(text);
      if (id != null) {
        endOfGeneration.set(id);
      }
    }
  }

  /**
   * Reads the vocabulary of {@code file}; {@code defaultAddBos} applies when the file has no
   * {@code tokenizer.ggml.add_bos_token}.
   */
  static Vocabulary of(GgufFile file, boolean defaultAddBos) {
    String[] tokens = file.getArray("tokenizer.ggml.tokens").strings().clone();
    for (int i = 0; i < tokens.length; i++) {
      if (tokens[i].isEmpty()) {
        tokens[i] = "[EMPTY_" + i + "]"; // llama.cpp's name, so no text maps to an empty token
      }
    }
    int n = tokens.length;
    TokenType[] types = new TokenType[n];
    Arrays.fill(types, TokenType.NORMAL);
    if (file.has("tokenizer.ggml.token_type")) {
      int[] codes = file.getArray("tokenizer.ggml.token_type").ints();
      requireLength(file, "tokenizer.ggml.token_type", codes.length, n);
      for (int i = 0; i < n; i++) {
        types[i] = TokenType.ofCode(codes[i]);
      }
    }
    float[] scores = new float[n];
    if (file.has("tokenizer.ggml.scores")) {
      float[] s = file.getArray("tokenizer.ggml.scores").floats();
      requireLength(file, "tokenizer.ggml.scores", s.length, n);
      scores = s.clone();
    }
    return new Vocabulary(
        tokens,
        types,
        scores,
        id(file, "bos", n),
        id(file, "eos", n),
        id(file, "unknown", n),
        file.getBoolean("tokenizer.ggml.add_bos_token", defaultAddBos),
        file.getBoolean("tokenizer.ggml.add_eos_token", false),
        Stream.of("eot", "eom")
            .map(which -> id(file, which, n))
            .filter(OptionalInt::isPresent)
            .mapToInt(OptionalInt::getAsInt)
            .toArray());
  }

  private static void requireLength(GgufFile file, String key, int length, int tokens) {
    if (length != tokens) {
      throw new GgufMetadataException(
          key,
          key + " in " + file.path() + " has " + length + " entries for " + tokens + " tokens");
    }
  }

  private static OptionalInt id(GgufFile file, String which, int n) {
    String key = "tokenizer.ggml." + which + "_token_id";
    if (!file.has(key)) {
      return OptionalInt.empty();
    }
    int id = file.getInt(key);
    if (id < 0 || id >= n) {
      throw new GgufMetadataException(
          key,
          key + "=" + id + " in " + file.path() + " is outside the vocabulary of " + n + " tokens");
    }
    return OptionalInt.of(id);
  }

  private static int utf8Length(String s) {
    return s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
  }

  /** The number of tokens. */
  public int size() {
    return tokens.length;
  }

  /** The text of token {@code id} as the file stores it. */
  public String text(int id) {
    Objects.checkIndex(id, tokens.length);
    return tokens[id];
  }

  /** The type of token {@code id}. */
  public TokenType type(int id) {
    Objects.checkIndex(id, tokens.length);
    return types[id];
  }

  /** The score of token {@code id} (0 where the file has no scores). */
  public float score(int id) {
    Objects.checkIndex(id, tokens.length);
    return scores[id];
  }

  /** The id of the token whose text is {@code text}, or -1. */
  public int id(String text) {
    Integer id = ids.get(text);
    return id == null ? -1 : id;
  }

  /** The beginning-of-sequence id, if the file names one. */
  public OptionalInt bos() {
    return bos;
  }

  /** The end-of-sequence id, if the file names one. */
  public OptionalInt eos() {
    return eos;
  }

  /** The unknown-token id, if the file names one. */
  public OptionalInt unknown() {
    return unknown;
  }

  /**
   * Whether {@code id} ends a generation: EOS, the file's {@code eot}/{@code eom} ids, and the
   * end-of-turn tokens llama.cpp recognises by text ({@code <|eot_id|>}, {@code <|im_end|>}, ...).
   */
  public boolean isEndOfGeneration(int id) {
    return endOfGeneration.get(id);
  }

  /** The ids that end a generation, ascending (see {@link #isEndOfGeneration}). */
  public int[] endOfGenerationIds() {
    return endOfGeneration.stream().toArray();
  }

  /** Whether a text prompt gets BOS first when special tokens are added. */
  public boolean addBos() {
    return addBos;
  }

  /** Whether a text prompt gets EOS last when special tokens are added. */
  public boolean addEos() {
    return addEos;
  }

  /** A piece of text to tokenize, or a special token already matched ({@code token >= 0}). */
  record Fragment(String text, int token) {}

  /**
   * Splits {@code text} around special tokens as llama.cpp does: the longest special token's
   * occurrences are taken first, left to right, then shorter ones in what remains. User-defined
   * tokens always match; control and unknown tokens only with {@code parseSpecial}.
   */
  List<Fragment> partition(String text, boolean parseSpecial) {
    List<Fragment> fragments = new ArrayList<>();
    if (text.isEmpty()) {
      return fragments;
    }
    fragments.add(new Fragment(text, -1));
    for (int id : specials) {
      if (!parseSpecial && types[id] != TokenType.USER_DEFINED) {
        continue;
      }
      String special = tokens[id];
      List<Fragment> next = null;
      for (int f = 0; f < fragments.size(); f++) {
        Fragment fragment = fragments.get(f);
        int at = fragment.token() < 0 ? fragment.text().indexOf(special) : -1;
        if (at < 0) {
          if (next != null) {
            next.add(fragment);
          }
          continue;
        }
        if (next == null) {
          next = new ArrayList<>(fragments.subList(0, f));
        }
        String rest = fragment.text();
        while (at >= 0) {
          if (at > 0) {
            next.add(new Fragment(rest.substring(0, at), -1));
          }
          next.add(new Fragment(special, id));
          rest = rest.substring(at + special.length());
          at = rest.indexOf(special);
        }
        if (!rest.isEmpty()) {
          next.add(new Fragment(rest, -1));
        }
      }
      if (next != null) {
        fragments = next;
      }
    }
    return fragments;
  }
}
