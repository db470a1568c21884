package io.kvtier.gguf.text;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * Python's string methods that Hugging Face chat templates call ({@code
 * message['content'].startswith('<tool_response>')}, {@code content.split('</think>')[-1]}),
 * which Jinjava, resolving methods on Java's {@link String}, lacks or gives Java's meaning
 * ({@code split} takes a regular expression there). Put before Jinjava's own resolver; it
 * resolves only these methods on strings, with Python's semantics, and leaves every other call
 * to the next resolver.
 */
final class PythonStringMethods extends ELResolver {

  @Override
  public Object invoke(
      ELContext context, Object base, Object method, Class<?>[] types, Object[] params) {
    if (!(base instanceof String s) || !(method instanceof String name)) {
      return null;
    }
    Object[] p = params == null ? new Object[0] : params;
    Object result =
        switch (name) {
          case "startswith" -> p.length == 1 ? anyMatch(p[0], s::startsWith) : null;
          case "endswith" -> p.length == 1 ? anyMatch(p[0], s::endsWith) : null;
          case "strip" -> strip(s, p, true, true);
          case "lstrip" -> strip(s, p, true, false);
          case "rstrip" -> strip(s, p, false, true);
          case "upper" -> p.length == 0 ? s.toUpperCase(Locale.ROOT) : null;
          case "lower" -> p.length == 0 ? s.toLowerCase(Locale.ROOT) : null;
          case "title" -> p.length == 0 ? title(s) : null;
          case "capitalize" ->
              p.length == 0 && !s.isEmpty()
                  ? s.substring(0, 1).toUpperCase(Locale.ROOT)
                      + s.substring(1).toLowerCase(Locale.ROOT)
                  : p.length == 0 ? s : null;
          case "split" -> split(s, p);
          case "join" -> p.length == 1 && p[0] instanceof Iterable<?> items ? join(s, items) : null;
          case "find" -> p.length == 1 ? (Object) s.indexOf(String.valueOf(p[0])) : null;
          default -> null;
        };
    if (result != null) {
      context.setPropertyResolved(true);
    }
    return result;
  }

  private static Boolean anyMatch(Object affixes, java.util.function.Predicate<String> test) {
    if (affixes instanceof Collection<?> many) {
      return many.stream().map(String::valueOf).anyMatch(test);
    }
    return test.test(String.valueOf(affixes));
  }

  /** Python's strip family: whitespace, or any of the given characters. */
  private static String strip(String s, Object[] p, boolean left, boolean right) {
    if (p.length > 1) {
      return null;
    }
    String chars = p.length == 1 && p[0] != null ? String.valueOf(p[0]) : null;
    int start = 0;
    int end = s.length();
    while (left && start < end && strippable(s.charAt(start), chars)) {
      start++;
    }
    while (right && end > start && strippable(s.charAt(end - 1), chars)) {
      end--;
    }
    return s.substring(start, end);
  }

  private static boolean strippable(char c, String chars) {
    return chars == null
        ? Character.isWhitespace(c) || Character.isSpaceChar(c)
        : chars.indexOf(c) >= 0;
  }

  private static String title(String s) {
    StringBuilder b = new StringBuilder(s.length());
    boolean inWord = false;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      b.append(inWord ? Character.toLowerCase(c) : Character.toTitleCase(c));
      inWord = Character.isLetter(c);
    }
    return b.toString();
  }

  /** Python's split: on runs of whitespace without a separator, else on the literal separator. */
  private static List<String> split(String s, Object[] p) {
    if (p.length > 2) {
      return null;
    }
    String separator = p.length >= 1 && p[0] != null ? String.valueOf(p[0]) : null;
    int max = p.length == 2 ? ((Number) p[1]).intValue() : -1;
    List<String> parts = new ArrayList<>();
    if (separator == null) {
      int i = 0;
      while (i < s.length()) {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
          i++;
        }
        if (i == s.length()) {
          break;
        }
        if (max >= 0 && parts.size() == max) {
          parts.add(s.substring(i)); // Python keeps the rest's trailing space
          break;
        }
        int start = i;
        while (i < s.length() && !Character.isWhitespace(s.charAt(i))) {
          i++;
        }
        parts.add(s.substring(start, i));
      }
      return parts;
    }
    if (separator.isEmpty()) {
      return null; // Python's ValueError: empty separator; let Jinjava report the call
    }
    int start = 0;
    for (int at = s.indexOf(separator);
        at >= 0 && (max < 0 || parts.size() < max);
        at = s.indexOf(separator, start)) {
      parts.add(s.substring(start, at));
      start = at + separator.length();
    }
    parts.add(s.substring(start));
    return parts;
  }

  private static String join(String separator, Iterable<?> items) {
    StringBuilder b = new StringBuilder();
    boolean first = true;
    for (Object item : items) {
      if (!first) {
        b.append(separator);
      }
      b.append(item);
      first = false;
    }
    return b.toString();
  }

  @Override
  public Class<?> getCommonPropertyType(ELContext context, Object base) {
    return null;
  }

  @Override
  public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
    return null;
  }

  @Override
  public Class<?> getType(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public Object getValue(ELContext context, Object base, Object property) {
    return null;
  }

  @Override
  public boolean isReadOnly(ELContext context, Object base, Object property) {
    return true;
  }

  @Override
  public void setValue(ELContext context, Object base, Object property, Object value) {
    // resolves no property: the next resolver sets it
  }
}
