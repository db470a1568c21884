package io.kvtier.gguf.tokenizer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The pre-tokenizers of byte-level BPE, by the name {@code tokenizer.ggml.pre} gives them: the
 * regular expressions that split text into words before merges, as llama.cpp defines them. Where
 * there are several, each splits the words of the one before (llama.cpp's {@code
 * unicode_regex_split}). With {@link Pattern#UNICODE_CHARACTER_CLASS}, {@code \s} is Unicode
 * White_Space, which is llama.cpp's whitespace class, and {@code \p{P}} is Unicode punctuation,
 * which is llama.cpp's (so {@code $ + < = > ^ ~ |}, symbols, are named apart where it names them).
 */
public enum PreTokenizer {
  /** Llama 3: contractions, letters with one leading non-letter, digits in threes. */
  LLAMA3(
      "llama-bpe",
      true,
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
          + "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
  /** Qwen2: as Llama 3, but every digit alone. */
  QWEN2(
      "qwen2",
      false,
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
          + "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
  /** GPT-2: lower-case contractions, words, numbers and punctuation with one leading space. */
  GPT2(
      "gpt-2",
      false,
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"),
  /**
   * SmolLM (and StarCoder's family in llama.cpp): every digit alone, then GPT-2's words. llama.cpp
   * also turns off the clean-up of spaces for it, which decoding here never does.
   */
  SMOLLM("smollm", false, "\\p{N}", Words.GPT2),
  /**
   * llama.cpp's default, for a file that names none or {@code default}: runs of punctuation and
   * the symbols {@code $+<=>^~|} apart, then GPT-2's words, then runs of digits, then each three
   * ASCII digits apart.
   */
  DEFAULT("default", false, "[\\p{P}\\$\\+<=>\\^~\\|]+", Words.GPT2, "\\p{N}+", "[0-9][0-9][0-9]");

  /** Expressions more than one pre-tokenizer uses (enum constants cannot read static fields). */
  private static final class Words {
    /** GPT-2's words, as llama.cpp writes them. */
    static final String GPT2 =
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
  }

  private final String ggufName;
  private final boolean ignoreMerges;
  private final List<Pattern> patterns;

  PreTokenizer(String ggufName, boolean ignoreMerges, String... regexes) {
    this.ggufName = ggufName;
    this.ignoreMerges = ignoreMerges;
    this.patterns =
        Arrays.stream(regexes)
            .map(r -> Pattern.compile(r, Pattern.UNICODE_CHARACTER_CLASS))
            .toList();
  }

  /** The name {@code tokenizer.ggml.pre} uses. */
  public String ggufName() {
    return ggufName;
  }

  /**
   * Whether a word that is itself a token is taken whole, without merges (llama.cpp's
   * {@code ignore_merges}, set for Llama 3).
   */
  public boolean ignoreMerges() {
    return ignoreMerges;
  }

  /** The pre-tokenizer named {@code name}, or null. */
  static PreTokenizer byName(String name) {
    for (PreTokenizer p : values()) {
      if (p.ggufName.equals(name)) {
        return p;
      }
    }
    return null;
  }

  static String supportedNames() {
    return Arrays.stream(values()).map(PreTokenizer::ggufName).collect(Collectors.joining(", "));
  }

  /**
   * The words of {@code text}: the first expression's matches, and any text between matches as a
   * word of its own; each further expression splits each word so again.
   */
  List<String> split(String text) {
    List<String> words = List.of(text);
    for (Pattern pattern : patterns) {
      List<String> next = new ArrayList<>();
      for (String word : words) {
        split(pattern, word, next);
      }
      words = next;
    }
    return words;
  }

  private static void split(Pattern pattern, String text, List<String> words) {
    Matcher m = pattern.matcher(text);
    int end = 0;
    while (m.find()) {
      if (m.start() > end) {
        words.add(text.substring(end, m.start()));
      }
      words.add(m.group());
      end = m.end();
    }
    if (end < text.length()) {
      words.add(text.substring(end));
    }
  }
}
