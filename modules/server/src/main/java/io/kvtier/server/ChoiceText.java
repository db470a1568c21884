package io.kvtier.server;

import java.util.List;

/**
 * One choice's text as its tokens come: decoded by the {@link ByteTokenizer}, cut before the first
 * stop sequence, and handed out in pieces that are final. A piece never ends in text that could
 * still turn out to start a stop sequence, so a stream never sends what the complete text would
 * not hold. Not thread-safe: the exchange's thread owns it.
 */
final class ChoiceText {
  private final ByteTokenizer.Decoder decoder = new ByteTokenizer.Decoder();
  private final List<String> stops;
  private final boolean endsAtEndToken;
  private final StringBuilder text = new StringBuilder();
  private int handedOut;
  private int tokens;
  private boolean stopped;

  /**
   * @param stops the stop sequences
   * @param endsAtEndToken whether a generated {@code <|end|>} stops the text (a chat reply)
   */
  ChoiceText(List<String> stops, boolean endsAtEndToken) {
    this.stops = List.copyOf(stops);
    this.endsAtEndToken = endsAtEndToken;
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
    tokens++;
    if (endsAtEndToken && token == ByteTokenizer.END) {
      text.append(decoder.finish());
      stopped = true;
      cutAtStop();
      return handOut(text.length());
    }
    text.append(decoder.add(token));
    cutAtStop();
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

  /** Whether a stop sequence or the end marker ended the text. */
  boolean stopped() {
    return stopped;
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
    for (String stop : stops) {
      int at = text.indexOf(stop);
      if (at >= 0 && (first < 0 || at < first)) {
        first = at;
      }
    }
    if (first >= 0) {
      text.setLength(Math.max(first, handedOut));
      stopped = true;
    }
  }

  /** The longest end of the text that begins some stop sequence. */
  private int heldBack() {
    int held = 0;
    String whole = text.toString();
    for (String stop : stops) {
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
