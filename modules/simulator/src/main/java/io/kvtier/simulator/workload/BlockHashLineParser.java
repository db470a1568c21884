package io.kvtier.simulator.workload;

import java.util.Arrays;

/**
 * Parses one line of a block-hash trace, a flat JSON object such as {@code {"timestamp": 0,
 * "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]}}. It knows just enough JSON for
 * that: string keys without escapes, integer (or, for the timestamp, decimal) numbers and arrays
 * of integers. Keys other than the four are skipped when their value is a number, a string or an
 * array of numbers, so that traces with an extra column still load.
 */
final class BlockHashLineParser {

  private final String source;
  private final long lineNumber;
  private final String line;
  private int pos;

  long timestamp = -1;
  long inputLength = -1;
  long outputLength = -1;
  long[] hashIds;

  private BlockHashLineParser(String source, long lineNumber, String line) {
    this.source = source;
    this.lineNumber = lineNumber;
    this.line = line;
  }

  /**
   * Parses a line; every field is present in the result.
   *
   * @throws TraceFormatException naming the line and column of the first problem
   */
  static BlockHashLineParser parse(String source, long lineNumber, String line) {
    BlockHashLineParser p = new BlockHashLineParser(source, lineNumber, line);
    p.parseObject();
    return p;
  }

  private void parseObject() {
    skipBlanks();
    expect('{');
    skipBlanks();
    if (peek() != '}') {
      while (true) {
        skipBlanks();
        int keyAt = pos;
        String key = parseKey();
        skipBlanks();
        expect(':');
        skipBlanks();
        parseField(key, keyAt);
        skipBlanks();
        if (peek() == ',') {
          pos++;
        } else {
          break;
        }
      }
    }
    expect('}');
    skipBlanks();
    if (pos < line.length()) {
      throw error("unexpected " + describe(peek()) + " after the closing '}'");
    }
    require(timestamp >= 0, "timestamp");
    require(inputLength >= 0, "input_length");
    require(outputLength >= 0, "output_length");
    require(hashIds != null, "hash_ids");
  }

  private void require(boolean present, String key) {
    if (!present) {
      pos = 0;
      throw error(
          "missing \""
              + key
              + "\": each line needs timestamp, input_length, output_length and"
              + " hash_ids");
    }
  }

  private void parseField(String key, int keyAt) {
    switch (key) {
      case "timestamp" -> timestamp = once(timestamp, parseNumber(true), key, keyAt);
      case "input_length" -> inputLength = once(inputLength, parseNumber(false), key, keyAt);
      case "output_length" -> outputLength = once(outputLength, parseNumber(false), key, keyAt);
      case "hash_ids" -> {
        if (hashIds != null) {
          pos = keyAt;
          throw error("\"hash_ids\" appears twice");
        }
        hashIds = parseIdArray();
      }
      default -> skipValue();
    }
  }

  private long once(long previous, long value, String key, int keyAt) {
    if (previous >= 0) {
      pos = keyAt;
      throw error("\"" + key + "\" appears twice");
    }
    return value;
  }

  private String parseKey() {
    expect('"');
    int start = pos;
    while (pos < line.length() && line.charAt(pos) != '"') {
      if (line.charAt(pos) == '\\') {
        throw error("escapes in keys are not supported");
      }
      pos++;
    }
    expect('"');
    return line.substring(start, pos - 1);
  }

  /** A non-negative number; a decimal fraction (timestamps only) is truncated to milliseconds. */
  private long parseNumber(boolean fractionAllowed) {
    if (peek() == '-') {
      throw error("negative number: lengths and timestamps must be >= 0");
    }
    long v = parseDigits();
    if (peek() == '.' && fractionAllowed) {
      pos++;
      parseDigits();
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') {
      throw error("expected an integer");
    }
    return v;
  }

  private long parseDigits() {
    int start = pos;
    long v = 0;
    while (pos < line.length() && Character.isDigit(line.charAt(pos)) && line.charAt(pos) < 128) {
      int digit = line.charAt(pos) - '0';
      if (v > (Long.MAX_VALUE - digit) / 10) {
        throw error("number is larger than " + Long.MAX_VALUE);
      }
      v = v * 10 + digit;
      pos++;
    }
    if (pos == start) {
      throw error("expected a number but found " + describe(peek()));
    }
    return v;
  }

  private long[] parseIdArray() {
    expect('[');
    long[] ids = new long[16];
    int n = 0;
    skipBlanks();
    if (peek() == ']') {
      pos++;
      return new long[0];
    }
    while (true) {
      skipBlanks();
      boolean negative = peek() == '-';
      if (negative) {
        pos++;
      }
      long id = parseDigits();
      if (n == ids.length) {
        ids = Arrays.copyOf(ids, 2 * n);
      }
      ids[n++] = negative ? -id : id;
      skipBlanks();
      if (peek() == ',') {
        pos++;
      } else {
        expect(']');
        return Arrays.copyOf(ids, n);
      }
    }
  }

  private void skipValue() {
    int c = peek();
    if (c == '"') {
      pos++;
      while (pos < line.length() && line.charAt(pos) != '"') {
        pos += line.charAt(pos) == '\\' ? 2 : 1;
      }
      expect('"');
    } else if (c == '[') {
      parseIdArray();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      pos += c == '-' ? 1 : 0;
      parseNumber(true);
    } else {
      throw error(
          "cannot skip the value "
              + describe(c)
              + " of an unknown key: only numbers, strings"
              + " and arrays of numbers are supported");
    }
  }

  private void skipBlanks() {
    while (pos < line.length() && (line.charAt(pos) == ' ' || line.charAt(pos) == '\t')) {
      pos++;
    }
  }

  private int peek() {
    return pos < line.length() ? line.charAt(pos) : -1;
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("expected '" + c + "' but found " + describe(peek()));
    }
    pos++;
  }

  private static String describe(int c) {
    return c < 0 ? "the end of the line" : "'" + (char) c + "'";
  }

  private TraceFormatException error(String problem) {
    return new TraceFormatException(source, lineNumber, pos + 1, problem);
  }
}
