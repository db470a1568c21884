package io.kvtier.gguf.tokenizer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The pre-tokenizers of byte-level BPE, by the name {@code tokenizer.ggml.pre} gives them: the
 * regular expression that splits text into words before merges, as llama.cpp defines it. With
 * {@link Pattern#UNICODE_CHARACTER_CLASS}, {@code \s} is Unicode White_Space, which is
 * llama.cpp's whitespace class.
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
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

  private final String ggufName;
  private final boolean ignoreMerges;
  private final Pattern pattern;

  PreTokenizer(String ggufName, boolean ignoreMerges, String regex) {
    this.ggufName = ggufName;
    this.ignoreMerges = ignoreMerges;
    this.pattern = Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS);
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

  /** The words of {@code text}: every match, and any text between matches as a word of its own. */
  List<String> split(String text) {
    List<String> words = new ArrayList<>();
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
    return words;
  }
}
