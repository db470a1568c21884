package io.kvtier.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict, minimal JSON parser for tests (RFC 8259 grammar, numbers as long or double): objects
 * become {@code Map<String, Object>}, arrays {@code List<Object>}, and anything that is not valid
 * JSON an {@link IllegalArgumentException} with the offset.
 */
final class MiniJson {
  private final String text;
  private int pos;

  private MiniJson(String text) {
    this.text = text;
  }

  static Object parse(String text) {
    MiniJson parser = new MiniJson(text);
    parser.whitespace();
    Object value = parser.value();
    parser.whitespace();
    if (parser.pos != text.length()) {
      throw parser.error("trailing characters");
    }
    return value;
  }

  private Object value() {
    if (pos >= text.length()) {
      throw error("unexpected end");
    }
    char c = text.charAt(pos);
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
    Map<String, Object> map = new LinkedHashMap<>();
    pos++;
    whitespace();
    if (peek() == '}') {
      pos++;
      return map;
    }
    while (true) {
      whitespace();
      if (peek() != '"') {
        throw error("expected a member name");
      }
      String name = string();
      whitespace();
      expect(':');
      whitespace();
      if (map.containsKey(name)) {
        throw error("duplicate member " + name);
      }
      map.put(name, value());
      whitespace();
      if (peek() == ',') {
        pos++;
      } else {
        expect('}');
        return map;
      }
    }
  }

  private List<Object> array() {
    List<Object> list = new ArrayList<>();
    pos++;
    whitespace();
    if (peek() == ']') {
      pos++;
      return list;
    }
    while (true) {
      whitespace();
      list.add(value());
      whitespace();
      if (peek() == ',') {
        pos++;
      } else {
        expect(']');
        return list;
      }
    }
  }

  private String string() {
    expect('"');
    StringBuilder out = new StringBuilder();
    while (true) {
      if (pos >= text.length()) {
        throw error("unterminated string");
      }
      char c = text.charAt(pos++);
      if (c == '"') {
        return out.toString();
      }
      if (c < 0x20) {
        throw error("raw control character in string");
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = text.charAt(pos++);
      switch (e) {
        case '"', '\\', '/' -> out.append(e);
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
          pos += 4;
        }
        default -> throw error("bad escape \\" + e);
      }
    }
  }

  private Object number() {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    while (pos < text.length() && "0123456789.eE+-".indexOf(text.charAt(pos)) >= 0) {
      pos++;
    }
    String n = text.substring(start, pos);
    if (!n.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")) {
      throw error("bad number '" + n + "'");
    }
    return n.matches("-?[0-9]+") ? (Object) Long.parseLong(n) : (Object) Double.parseDouble(n);
  }

  private Object literal(String word, Object value) {
    if (!text.startsWith(word, pos)) {
      throw error("expected " + word);
    }
    pos += word.length();
    return value;
  }

  private char peek() {
    return pos < text.length() ? text.charAt(pos) : '\0';
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("expected '" + c + "'");
    }
    pos++;
  }

  private void whitespace() {
    while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) {
      pos++;
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException(what + " at offset " + pos + " of: " + text);
  }
}
