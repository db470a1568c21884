package io.kvtier.server;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * The fields of one JSON object of a request body, read with the checks every field shares: an
 * unknown name is a 400 listing the known ones, a JSON {@code null} is the same as an absent field
 * (as in OpenAI's API), and each wrong type or range is a 400 naming the field as the request spells
 * it ({@code messages[1].content}).
 */
final class BodyFields {
  private final JsonNode object;
  private final String prefix;

  private BodyFields(JsonNode object, String prefix) {
    this.object = object;
    this.prefix = prefix;
  }

  /**
   * Checks that a value is an object holding only known fields.
   *
   * @param value the value
   * @param path its name in the request, empty for the body
   * @param example what the object should look like, for the message
   * @param known the names it may hold
   * @return its fields
   */
  static BodyFields of(JsonNode value, String path, String example, Set<String> known) {
    if (!value.isObject()) {
      if (path.isEmpty()) {
        throw ApiException.badRequest("the body must be a JSON object like " + example);
      }
      throw ApiException.badField(
          path, path + " must be an object like " + example + ", not " + describe(value));
    }
    Iterator<String> names = value.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!known.contains(name)) {
        String param = path.isEmpty() ? name : path + "." + name;
        throw ApiException.badField(
            param,
            "unknown field \""
                + param
                + "\": the fields "
                + (path.isEmpty() ? "" : "of " + path + " ")
                + "are "
                + String.join(", ", new TreeSet<>(known)));
      }
    }
    return new BodyFields(value, path.isEmpty() ? "" : path + ".");
  }

  /**
   * A field's name as the request spells it.
   *
   * @param name the field
   * @return the path, for example {@code stream_options.include_usage}
   */
  String param(String name) {
    return prefix + name;
  }

  /**
   * A field's value.
   *
   * @param name the field
   * @return the value, empty if absent or {@code null}
   */
  Optional<JsonNode> get(String name) {
    JsonNode v = object.get(name);
    return v == null || v.isNull() ? Optional.empty() : Optional.of(v);
  }

  /**
   * A field that must be there.
   *
   * @param name the field
   * @param what what it holds, for the message
   * @return its value
   */
  JsonNode required(String name, String what) {
    return get(name)
        .orElseThrow(
            () -> ApiException.badField(param(name), "missing field " + param(name) + ": " + what));
  }

  OptionalInt integer(String name) {
    return get(name).map(v -> OptionalInt.of(integer(v, param(name)))).orElse(OptionalInt.empty());
  }

  OptionalLong longInteger(String name) {
    return get(name)
        .map(
            v -> {
              if (!v.isIntegralNumber()) {
                throw ApiException.badField(
                    param(name), param(name) + " must be an integer, not " + describe(v));
              }
              if (!v.canConvertToLong()) {
                throw ApiException.badField(
                    param(name), param(name) + "=" + v.asText() + " is out of range");
              }
              return OptionalLong.of(v.longValue());
            })
        .orElse(OptionalLong.empty());
  }

  Optional<Boolean> bool(String name) {
    return get(name)
        .map(
            v -> {
              if (!v.isBoolean()) {
                throw ApiException.badField(
                    param(name), param(name) + " must be true or false, not " + describe(v));
              }
              return v.booleanValue();
            });
  }

  Optional<String> string(String name) {
    return get(name).map(v -> string(v, param(name)));
  }

  Optional<BigDecimal> number(String name) {
    return get(name)
        .map(
            v -> {
              if (!v.isNumber()) {
                throw ApiException.badField(
                    param(name), param(name) + " must be a number, not " + describe(v));
              }
              return v.decimalValue();
            });
  }

  /**
   * A field kvtier serve does not implement: absent or {@code null} pass; so does an empty value
   * ({@code false}, {@code {}}, {@code []}) that asks for nothing.
   *
   * @param name the field
   */
  void unsupported(String name) {
    get(name)
        .ifPresent(
            v -> {
              boolean empty =
                  (v.isBoolean() && !v.booleanValue()) || (v.isContainerNode() && v.isEmpty());
              if (!empty) {
                throw ApiException.badField(
                    param(name), param(name) + " is not supported by kvtier serve: leave it out");
              }
            });
  }

  /**
   * {@code stop}: a string or up to four strings.
   *
   * @return the stop sequences, none empty
   */
  List<String> stops() {
    Optional<JsonNode> stop = get("stop");
    List<String> stops = new ArrayList<>();
    if (stop.isEmpty()) {
      return stops;
    }
    JsonNode v = stop.get();
    if (v.isArray()) {
      if (v.size() > 4) {
        throw ApiException.badField(
            param("stop"),
            param("stop") + " holds " + v.size() + " strings, at most 4 are allowed");
      }
      for (int i = 0; i < v.size(); i++) {
        stops.add(string(v.get(i), param("stop") + "[" + i + "]"));
      }
    } else {
      stops.add(string(v, param("stop")));
    }
    for (String s : stops) {
      if (s.isEmpty()) {
        throw ApiException.badField(param("stop"), param("stop") + " holds an empty string");
      }
    }
    return stops;
  }

  static int integer(JsonNode value, String param) {
    if (value.isIntegralNumber()) {
      if (!value.canConvertToInt()) {
        throw ApiException.badField(param, param + "=" + value.asText() + " is out of range");
      }
      return value.intValue();
    }
    throw ApiException.badField(param, param + " must be an integer, not " + describe(value));
  }

  static String string(JsonNode value, String param) {
    if (!value.isTextual()) {
      throw ApiException.badField(param, param + " must be a string, not " + describe(value));
    }
    return value.textValue();
  }

  static String describe(JsonNode value) {
    if (value.isNull()) {
      return "null";
    }
    if (value.isTextual()) {
      String s = value.textValue();
      return "the string \"" + (s.length() > 20 ? s.substring(0, 20) + "..." : s) + "\"";
    }
    if (value.isArray()) {
      return "an array";
    }
    if (value.isObject()) {
      return "an object";
    }
    if (value.isBigDecimal()) {
      return value.decimalValue().toString();
    }
    return value.asText();
  }
}
