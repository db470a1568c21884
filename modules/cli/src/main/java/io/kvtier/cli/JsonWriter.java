package io.kvtier.cli;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;

/**
 * A minimal streaming JSON writer: objects, arrays, strings, booleans, numbers and null, written
 * compactly. Enough for the CLI's machine-readable output without a JSON library. It checks
 * nesting (a name only inside an object, a value only where one may stand) and throws {@link
 * IllegalStateException} on misuse.
 */
public final class JsonWriter {

  private enum Scope {
    OBJECT_EXPECTING_NAME,
    OBJECT_EXPECTING_VALUE,
    ARRAY
  }

  private final StringBuilder out = new StringBuilder();
  private final Deque<Scope> scopes = new ArrayDeque<>();
  private final Deque<Boolean> empty = new ArrayDeque<>();
  private boolean done;

  /**
   * Starts an object.
   *
   * @return this writer
   */
  public JsonWriter beginObject() {
    beforeValue();
    out.append('{');
    scopes.push(Scope.OBJECT_EXPECTING_NAME);
    empty.push(true);
    return this;
  }

  /**
   * Ends the current object.
   *
   * @return this writer
   */
  public JsonWriter endObject() {
    if (scopes.peek() != Scope.OBJECT_EXPECTING_NAME) {
      throw new IllegalStateException("endObject() outside an object or after a dangling name");
    }
    return close('}');
  }

  /**
   * Starts an array.
   *
   * @return this writer
   */
  public JsonWriter beginArray() {
    beforeValue();
    out.append('[');
    scopes.push(Scope.ARRAY);
    empty.push(true);
    return this;
  }

  /**
   * Ends the current array.
   *
   * @return this writer
   */
  public JsonWriter endArray() {
    if (scopes.peek() != Scope.ARRAY) {
      throw new IllegalStateException("endArray() outside an array");
    }
    return close(']');
  }

  /**
   * Writes the name of the next member of the current object.
   *
   * @param name the member name
   * @return this writer
   */
  public JsonWriter name(String name) {
    Objects.requireNonNull(name, "name");
    if (scopes.peek() != Scope.OBJECT_EXPECTING_NAME) {
      throw new IllegalStateException("name(\"" + name + "\") outside an object or twice in a row");
    }
    comma();
    string(name);
    out.append(':');
    scopes.pop();
    scopes.push(Scope.OBJECT_EXPECTING_VALUE);
    return this;
  }

  /**
   * Writes a string value, or null.
   *
   * @param value the string; null writes {@code null}
   * @return this writer
   */
  public JsonWriter value(String value) {
    beforeValue();
    if (value == null) {
      out.append("null");
    } else {
      string(value);
    }
    afterValue();
    return this;
  }

  /**
   * Writes a boolean value.
   *
   * @param value the value
   * @return this writer
   */
  public JsonWriter value(boolean value) {
    beforeValue();
    out.append(value);
    afterValue();
    return this;
  }

  /**
   * Writes an integer value.
   *
   * @param value the value
   * @return this writer
   */
  public JsonWriter value(long value) {
    beforeValue();
    out.append(value);
    afterValue();
    return this;
  }

  /**
   * The document written.
   *
   * @return the JSON text
   * @throws IllegalStateException if an object or array is still open, or nothing was written
   */
  public String toJson() {
    if (!scopes.isEmpty() || !done) {
      throw new IllegalStateException("the JSON document is incomplete: " + out);
    }
    return out.toString();
  }

  private JsonWriter close(char bracket) {
    out.append(bracket);
    scopes.pop();
    empty.pop();
    afterValue();
    return this;
  }

  private void beforeValue() {
    if (done) {
      throw new IllegalStateException("a JSON document has one top-level value");
    }
    Scope scope = scopes.peek();
    if (scope == Scope.OBJECT_EXPECTING_NAME) {
      throw new IllegalStateException("a value inside an object needs a name() first");
    }
    if (scope == Scope.ARRAY) {
      comma();
    }
    if (scope == Scope.OBJECT_EXPECTING_VALUE) {
      scopes.pop();
      scopes.push(Scope.OBJECT_EXPECTING_NAME);
    }
  }

  /** A complete top-level value (a scalar, or a container just closed) ends the document. */
  private void afterValue() {
    if (scopes.isEmpty()) {
      done = true;
    }
  }

  private void comma() {
    if (empty.peek()) {
      empty.pop();
      empty.push(false);
    } else {
      out.append(',');
    }
  }

  private void string(String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
