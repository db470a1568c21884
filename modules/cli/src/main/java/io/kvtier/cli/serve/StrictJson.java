package io.kvtier.cli.serve;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON parser (RFC 8259) for request bodies: objects become {@code Map<String, Object>}
 * in document order, arrays {@code List<Object>}, strings {@link String}, integers {@link Long}
 * (or {@link BigInteger} beyond a long), other numbers {@link BigDecimal}, {@code true}/{@code
 * false} {@link Boolean}, and {@code null} {@link #NULL}. Anything else, duplicate names, nesting
 * deeper than {@value #MAX_DEPTH} and trailing characters are a {@link JsonException} with the
 * offset, so a bad body is a clear 400, never a stack overflow or a 500.
 */
public final class StrictJson {
  /** The deepest nesting accepted; request bodies need two levels. */
  public static final int MAX_DEPTH = 32;

  /** The JSON {@code null}, distinct from an absent field. */
  public static final Object NULL =
      new Object() {
        @Override
        public String toString() {
          return "null";
        }
      };

  /** A body that is not valid JSON. */
  public static final class JsonException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    JsonException(String message) {
      super(message);
    }
  }

  private final String text;
  private int pos;
  private int depth;

  private StrictJson(String text) {
    this.text = text;
  }

  /**
   * Parses one JSON value.
   *
   * @param text the document
   * @return the value
   * @throws JsonException if the text is not exactly one valid JSON value
   */
  public static Object parse(String text) {
    StrictJson parser = new StrictJson(java.util.Objects.requireNonNull(text, "text"));
    parser.whitespace();
    Object value = parser.value();
    parser.whitespace();
    if (parser.pos != text.length()) {
      throw parser.error("unexpected characters after the JSON value");
    }
    return value;
  }

  private Object value() {
    if (pos >= text.length()) {
      throw error("unexpected end of input, expected a value");
    }
    char c = text.charAt(pos);
    return switch (c) {
      case '{' -> object();
      case '[' -> array();
      case '"' -> string();
      case 't' -> literal("true", Boolean.TRUE);
      case 'f' -> literal("false", Boolean.FALSE);
      case 'n' -> literal("null", NULL);
      default -> {
        if (c == '-' || (c >= '0' && c <= '9')) {
          yield number();
        }
        throw error("unexpected character '" + printable(c) + "', expected a value");
      }
    };
  }

  private Map<String, Object> object() {
    enter();
    pos++;
    Map<String, Object> map = new LinkedHashMap<>();
    whitespace();
    if (peek() == '}') {
      pos++;
      depth--;
      return Collections.unmodifiableMap(map);
    }
    while (true) {
      whitespace();
      if (peek() != '"') {
        throw error("expected a field name in double quotes");
      }
      int at = pos;
      String name = string();
      whitespace();
      expect(':');
      whitespace();
      if (map.put(name, value()) != null) {
        pos = at;
        throw error("duplicate field \"" + name + "\"");
      }
      whitespace();
      char c = next("',' or '}'");
      if (c == '}') {
        depth--;
        return Collections.unmodifiableMap(map);
      }
      if (c != ',') {
        pos--;
        throw error("expected ',' or '}' after a field, found '" + printable(c) + "'");
      }
    }
  }

  private List<Object> array() {
    enter();
    pos++;
    List<Object> list = new ArrayList<>();
    whitespace();
    if (peek() == ']') {
      pos++;
      depth--;
      return Collections.unmodifiableList(list);
    }
    while (true) {
      whitespace();
      list.add(value());
      whitespace();
      char c = next("',' or ']'");
      if (c == ']') {
        depth--;
        return Collections.unmodifiableList(list);
      }
      if (c != ',') {
        pos--;
        throw error("expected ',' or ']' in an array, found '" + printable(c) + "'");
      }
    }
  }

  private void enter() {
    if (++depth > MAX_DEPTH) {
      throw error("nesting deeper than " + MAX_DEPTH + " levels");
    }
  }

  private String string() {
    pos++;
    StringBuilder out = new StringBuilder();
    while (true) {
      char c = next("a closing '\"'");
      if (c == '"') {
        return out.toString();
      }
      if (c < 0x20) {
        pos--;
        throw error("unescaped control character in a string");
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = next("an escape");
      switch (e) {
        case '"', '\\', '/' -> out.append(e);
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          if (pos + 4 > text.length()) {
            throw error("incomplete \\u escape");
          }
          int code = 0;
          for (int i = 0; i < 4; i++) {
            int digit = Character.digit(text.charAt(pos + i), 16);
            if (digit < 0) {
              throw error("invalid \\u escape");
            }
            code = code * 16 + digit;
          }
          pos += 4;
          out.append((char) code);
        }
        default -> {
          pos--;
          throw error("invalid escape '\\" + printable(e) + "'");
        }
      }
    }
  }

  private Object number() {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    if (peek() == '0') {
      pos++;
    } else if (isDigit(peek())) {
      digits();
    } else {
      throw error("invalid number: expected a digit");
    }
    boolean integral = true;
    if (peek() == '.') {
      integral = false;
      pos++;
      if (!isDigit(peek())) {
        throw error("invalid number: expected a digit after '.'");
      }
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      pos++;
      if (peek() == '+' || peek() == '-') {
        pos++;
      }
      if (!isDigit(peek())) {
        throw error("invalid number: expected a digit in the exponent");
      }
      digits();
    }
    String literal = text.substring(start, pos);
    if (literal.length() > 100) {
      // No field takes such a number, and parsing a huge literal costs quadratic time.
      pos = start;
      throw error("number literal longer than 100 characters");
    }
    if (integral) {
      BigInteger value = new BigInteger(literal);
      return value.bitLength() < 64 ? (Object) value.longValue() : value;
    }
    return new BigDecimal(literal);
  }

  private void digits() {
    while (isDigit(peek())) {
      pos++;
    }
  }

  private static boolean isDigit(int c) {
    return c >= '0' && c <= '9';
  }

  private Object literal(String word, Object value) {
    if (!text.startsWith(word, pos)) {
      throw error("invalid literal, expected " + word);
    }
    pos += word.length();
    return value;
  }

  private int peek() {
    return pos < text.length() ? text.charAt(pos) : -1;
  }

  private char next(String expected) {
    if (pos >= text.length()) {
      throw error("unexpected end of input, expected " + expected);
    }
    return text.charAt(pos++);
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("expected '" + c + "'");
    }
    pos++;
  }

  private void whitespace() {
    while (pos < text.length()) {
      char c = text.charAt(pos);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      pos++;
    }
  }

  private static String printable(char c) {
    return c < 0x20 || c > 0x7e ? String.format("\\u%04x", (int) c) : String.valueOf(c);
  }

  private JsonException error(String message) {
    return new JsonException("invalid JSON at offset " + pos + ": " + message);
  }
}
