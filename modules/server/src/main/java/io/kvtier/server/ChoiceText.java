package io.kvtier.server;

import io.kvtier.serving.ModelText;
import java.util.Objects;
import java.util.Set;

/**
 * One choice's text as its tokens come: decoded by the model's {@link ModelText.Decoder}, ended at
 * the model's end-of-generation tokens or a stop token id, cut before the first stop sequence, and
 * handed out in pieces that are final. A piece never ends in text that could still turn out to
 * start a stop sequence, so a stream never sends what the complete text would not hold (with vLLM's
 * {@code include_stop_str_in_output} the sequence stays at the end). Before its
 * {@code min_tokens} nothing ends it (vLLM's rule: the sampler holds the end tokens back, and stop
 * sequences are looked for only in text that ends at or after that token). Not thread-safe: the
 * exchange's thread owns it.
 */
final class ChoiceText {
  private final ModelText.Decoder decoder;
  private final Set<Integer> endTokens;
  private final StopRules rules;
  private final StringBuilder text = new StringBuilder();
  private int handedOut;
  private int tokens;
  private boolean stopped;
  private Object stopReason;

  /** The text's length before the first token that may end it: stops end past it. */
  private int searchedFrom;

  /**
   * @param decoder the model's decoder of this sequence
   * @param endTokens the tokens that stop the text ({@link ModelText#endOfReply()} for a chat
   *     reply, {@link ModelText#endOfGeneration()} for a completion); they add no text
   * @param rules the request's: the end tokens end nothing with {@code ignoreEos} (they add no
   *     text either way); each stop token id ends the text after its own text (a special token has
   *     none), whatever {@code ignoreEos}; nothing ends it before {@code minTokens}; a stop
   *     sequence cuts it before the sequence, or after it with {@code includeStopStr}
   */
  ChoiceText(ModelText.Decoder decoder, Set<Integer> endTokens, StopRules rules) {
    this.decoder = Objects.requireNonNull(decoder, "decoder");
    this.endTokens = Set.copyOf(endTokens);
    this.rules = Objects.requireNonNull(rules, "rules");
  }

  /**
   * Adds a generated token.
   *
   * @param token the id
   * @return the text now final, maybe empty; empty once stopped
   */
  String add(int token) {
    if (stopped) {
      return "";
    }
    if (tokens < rules.minTokens()) {
      searchedFrom = text.length();
    }
    tokens++;
    boolean mayEnd = tokens >= rules.minTokens();
    if (mayEnd && rules.stopTokenIds().contains(token)) {
      text.append(decoder.add(token)).append(decoder.finish());
      stopped = true;
      stopReason = token;
      cutAtStop();
      return handOut(text.length());
    }
    if (endTokens.contains(token)) {
      if (rules.ignoreEos() || !mayEnd) {
        return "";
      }
      text.append(decoder.finish());
      stopped = true;
      cutAtStop();
      return handOut(text.length());
    }
    text.append(decoder.add(token));
    if (mayEnd) {
      cutAtStop();
    }
    return handOut(stopped ? text.length() : text.length() - heldBack());
  }

  /**
   * Ends the text (the generation finished).
   *
   * @return the rest of the text
   */
  String finish() {
    if (!stopped) {
      text.append(decoder.finish());
      cutAtStop();
    }
    return handOut(text.length());
  }

  /** Whether a stop sequence, a stop token id or an end-of-generation token ended the text. */
  boolean stopped() {
    return stopped;
  }

  /**
   * What ended the text, as vLLM's {@code stop_reason} says it: the stop sequence (a String) or
   * the stop token id (an Integer); null where nothing did, or an end-of-generation token did.
   */
  Object stopReason() {
    return stopReason;
  }

  /** Tokens that count as generated: those up to the one that stopped the text. */
  int tokens() {
    return tokens;
  }

  /** The whole text so far. */
  String text() {
    return text.toString();
  }

  private void cutAtStop() {
    int first = -1;
    String matched = null;
    for (String stop : rules.stops()) {
      int at = text.indexOf(stop, Math.max(0, searchedFrom - stop.length() + 1));
      if (at >= 0 && (first < 0 || at < first)) {
        first = at;
        matched = stop;
      }
    }
    if (first >= 0) {
      stopReason = matched;
      text.setLength(
          Math.max(rules.includeStopStr() ? first + matched.length() : first, handedOut));
      stopped = true;
    }
  }

  /** The longest end of the text that begins some stop sequence. */
  private int heldBack() {
    int held = 0;
    String whole = text.toString();
    for (String stop : rules.stops()) {
      for (int n = Math.min(stop.length() - 1, whole.length() - handedOut); n > held; n--) {
        if (whole.regionMatches(whole.length() - n, stop, 0, n)) {
          held = n;
          break;
        }
      }
    }
    return held;
  }

  private String handOut(int upTo) {
    String piece = text.substring(handedOut, upTo);
    handedOut = upTo;
    return piece;
  }
}
