package io.kvtier.cli.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A strict parser of the XML subset that the report's SVG uses: elements, quoted attributes,
 * text, the five predefined entities and numeric character references. Anything else (an
 * unclosed or mismatched tag, an unquoted attribute, a bare {@code &} or {@code <}) fails. The
 * module does not read {@code java.xml}, so the tests cannot use the JDK's parser.
 */
final class MiniXml {
  /** One element. */
  record Element(String name, Map<String, String> attributes, List<Element> children, String text) {
    String attr(String key) {
      String v = attributes.get(key);
      if (v == null) {
        throw new AssertionError("<" + name + "> has no attribute " + key + ": " + attributes);
      }
      return v;
    }

    /** This element and every element below it, depth first. */
    Stream<Element> descendants() {
      return Stream.concat(Stream.of(this), children.stream().flatMap(Element::descendants));
    }
  }

  private final String s;
  private int i;

  private MiniXml(String s) {
    this.s = s;
  }

  static Element parse(String xml) {
    MiniXml p = new MiniXml(xml.strip());
    Element root = p.element();
    if (p.i != p.s.length()) {
      throw p.error("content after the root element");
    }
    return root;
  }

  private Element element() {
    expect('<');
    String name = name();
    Map<String, String> attributes = new LinkedHashMap<>();
    while (true) {
      spaces();
      if (s.startsWith("/>", i)) {
        i += 2;
        return new Element(name, attributes, List.of(), "");
      }
      if (peek() == '>') {
        i++;
        break;
      }
      String key = name();
      spaces();
      expect('=');
      spaces();
      char quote = peek();
      if (quote != '"' && quote != '\'') {
        throw error("unquoted value of attribute " + key);
      }
      i++;
      int end = s.indexOf(quote, i);
      if (end < 0) {
        throw error("unterminated attribute " + key);
      }
      if (attributes.put(key, decode(s.substring(i, end))) != null) {
        throw error("duplicate attribute " + key);
      }
      i = end + 1;
    }
    List<Element> children = new ArrayList<>();
    StringBuilder text = new StringBuilder();
    while (true) {
      if (i >= s.length()) {
        throw error("unclosed <" + name + ">");
      }
      if (s.startsWith("</", i)) {
        i += 2;
        String close = name();
        if (!close.equals(name)) {
          throw error("</" + close + "> closes <" + name + ">");
        }
        spaces();
        expect('>');
        return new Element(name, attributes, children, text.toString());
      }
      if (peek() == '<') {
        children.add(element());
      } else {
        int end = s.indexOf('<', i);
        if (end < 0) {
          throw error("unclosed <" + name + ">");
        }
        text.append(decode(s.substring(i, end)));
        i = end;
      }
    }
  }

  private String decode(String raw) {
    StringBuilder out = new StringBuilder();
    for (int k = 0; k < raw.length(); k++) {
      char c = raw.charAt(k);
      if (c == '<') {
        throw error("bare < in text or attribute");
      }
      if (c != '&') {
        out.append(c);
        continue;
      }
      int semi = raw.indexOf(';', k);
      if (semi < 0) {
        throw error("bare & in text or attribute");
      }
      String entity = raw.substring(k + 1, semi);
      switch (entity) {
        case "amp" -> out.append('&');
        case "lt" -> out.append('<');
        case "gt" -> out.append('>');
        case "quot" -> out.append('"');
        case "apos" -> out.append('\'');
        default -> {
          if (!entity.matches("#[0-9]+|#x[0-9a-fA-F]+")) {
            throw error("unknown entity &" + entity + ";");
          }
          out.appendCodePoint(
              entity.startsWith("#x")
                  ? Integer.parseInt(entity.substring(2), 16)
                  : Integer.parseInt(entity.substring(1)));
        }
      }
      k = semi;
    }
    return out.toString();
  }

  private String name() {
    int start = i;
    while (i < s.length()
        && (Character.isLetterOrDigit(s.charAt(i)) || "-_:.".indexOf(s.charAt(i)) >= 0)) {
      i++;
    }
    if (i == start) {
      throw error("a name expected");
    }
    return s.substring(start, i);
  }

  private void spaces() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
  }

  private char peek() {
    if (i >= s.length()) {
      throw error("unexpected end");
    }
    return s.charAt(i);
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("'" + c + "' expected");
    }
    i++;
  }

  private IllegalArgumentException error(String what) {
    int from = Math.max(0, i - 40);
    return new IllegalArgumentException(
        what + " at " + i + ": ..." + s.substring(from, Math.min(s.length(), i + 40)));
  }
}
