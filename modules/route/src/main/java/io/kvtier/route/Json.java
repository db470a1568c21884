package io.kvtier.route;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the router reads from a request body (the prompt or the messages, and {@code
 * stream}): objects as maps, arrays as lists, numbers as {@code Double} or {@code Long},
 * strings, booleans, null. The body itself is forwarded untouched.
 */
final class Json {
  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  /** Parses one value; {@link IllegalArgumentException} with the position if it is not JSON. */
  static Object parse(String text) {
    Json j = new Json(text);
    j.space();
    Object v = j.value();
    j.space();
    if (j.i != text.length()) {
      throw j.error("text after the value");
    }
    return v;
  }

  private Object value() {
    if (i >= s.length()) {
      throw error("unexpected end");
    }
    char c = s.charAt(i);
    return switch (c) {
      case '{' -> object();
      case '[' -> array();
      case '"' -> string();
      case 't' -> literal("true", Boolean.TRUE);
      case 'f' -> literal("false", Boolean.FALSE);
      case 'n' -> literal("null", null);
      default -> number();
    };
  }

  private Map<String, Object> object() {
    Map<String, Object> out = new LinkedHashMap<>();
    i++;
    space();
    if (peek('}')) {
      i++;
      return out;
    }
    while (true) {
      space();
      if (!peek('"')) {
        throw error("expected a field name");
      }
      String key = string();
      space();
      expect(':');
      space();
      out.put(key, value());
      space();
      if (peek(',')) {
        i++;
      } else {
        expect('}');
        return out;
      }
    }
  }

  private List<Object> array() {
    List<Object> out = new ArrayList<>();
    i++;
    space();
    if (peek(']')) {
      i++;
      return out;
    }
    while (true) {
      space();
      out.add(value());
      space();
      if (peek(',')) {
        i++;
      } else {
        expect(']');
        return out;
      }
    }
  }

  private String string() {
    StringBuilder b = new StringBuilder();
    i++;
    while (i < s.length()) {
      char c = s.charAt(i++);
      if (c == '"') {
        return b.toString();
      }
      if (c == '\\') {
        if (i >= s.length()) {
          break;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'n' -> b.append('\n');
          case 't' -> b.append('\t');
          case 'r' -> b.append('\r');
          case 'b' -> b.append('\b');
          case 'f' -> b.append('\f');
          case 'u' -> {
            if (i + 4 > s.length()) {
              throw error("short \\u escape");
            }
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
          }
          default -> b.append(e);
        }
      } else {
        b.append(c);
      }
    }
    throw error("unterminated string");
  }

  private Object number() {
    int start = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    String n = s.substring(start, i);
    if (n.isEmpty()) {
      throw error("unexpected character '" + s.charAt(start) + "'");
    }
    try {
      return n.contains(".") || n.contains("e") || n.contains("E")
          ? (Object) Double.parseDouble(n)
          : (Object) Long.parseLong(n);
    } catch (NumberFormatException e) {
      throw error("bad number " + n);
    }
  }

  private Object literal(String word, Object v) {
    if (!s.startsWith(word, i)) {
      throw error("expected " + word);
    }
    i += word.length();
    return v;
  }

  private boolean peek(char c) {
    return i < s.length() && s.charAt(i) == c;
  }

  private void expect(char c) {
    if (!peek(c)) {
      throw error("expected '" + c + "'");
    }
    i++;
  }

  private void space() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("the body is not JSON: " + what + " at character " + i);
  }
}
