package io.kvtier.simulator.workload;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code key=value,key=value} part of a generator spec, checked against the keys the
 * generator accepts, with typed getters whose errors name the workload, the key, the value and
 * what is expected.
 */
final class SpecParameters {

  private final String workload;
  private final List<String> accepted;
  private final Map<String, String> values = new LinkedHashMap<>();

  private SpecParameters(String workload, List<String> accepted) {
    this.workload = workload;
    this.accepted = accepted;
  }

  /**
   * Parses the parameters of one generator.
   *
   * @param workload the generator's name, for messages
   * @param text the text after {@code name:}, possibly empty
   * @param accepted the keys the generator accepts
   * @return the parameters
   * @throws IllegalArgumentException for a malformed pair, a duplicate or an unknown key
   */
  static SpecParameters parse(String workload, String text, List<String> accepted) {
    Objects.requireNonNull(text, "text");
    SpecParameters p = new SpecParameters(workload, List.copyOf(accepted));
    if (text.isBlank()) {
      return p;
    }
    for (String pair : text.split(",", -1)) {
      int eq = pair.indexOf('=');
      if (eq <= 0 || eq == pair.length() - 1) {
        throw new IllegalArgumentException(
            "malformed parameter '%s' of workload %s: write key=value pairs separated by commas,"
                    .formatted(pair, workload)
                + " e.g. %s:%s=..., accepted keys: %s"
                    .formatted(workload, accepted.getFirst(), String.join(", ", accepted)));
      }
      String key = pair.substring(0, eq).strip();
      String value = pair.substring(eq + 1).strip();
      if (!p.accepted.contains(key)) {
        throw new IllegalArgumentException(
            "unknown parameter '%s' of workload %s: accepted parameters are %s"
                .formatted(key, workload, String.join(", ", accepted)));
      }
      if (p.values.putIfAbsent(key, value) != null) {
        throw new IllegalArgumentException(
            "parameter '%s' of workload %s is given twice: give it once".formatted(key, workload));
      }
    }
    return p;
  }

  int intValue(String key, int defaultValue, int min) {
    String text = values.get(key);
    if (text == null) {
      return defaultValue;
    }
    int v;
    try {
      v = Integer.parseInt(text);
    } catch (NumberFormatException e) {
      throw invalid(key, text, "an integer >= " + min, defaultValue);
    }
    if (v < min) {
      throw invalid(key, text, "an integer >= " + min, defaultValue);
    }
    return v;
  }

  long longValue(String key, long defaultValue) {
    String text = values.get(key);
    if (text == null) {
      return defaultValue;
    }
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw invalid(key, text, "a 64-bit integer", defaultValue);
    }
  }

  double doubleValue(String key, double defaultValue, double min) {
    String text = values.get(key);
    if (text == null) {
      return defaultValue;
    }
    double v;
    try {
      v = Double.parseDouble(text);
    } catch (NumberFormatException e) {
      throw invalid(key, text, "a number >= " + min, defaultValue);
    }
    if (!(v >= min) || Double.isInfinite(v)) {
      throw invalid(key, text, "a finite number >= " + min, defaultValue);
    }
    return v;
  }

  <E extends Enum<E>> E enumValue(String key, E defaultValue) {
    String text = values.get(key);
    if (text == null) {
      return defaultValue;
    }
    E[] constants = defaultValue.getDeclaringClass().getEnumConstants();
    for (E e : constants) {
      if (e.name().equalsIgnoreCase(text)) {
        return e;
      }
    }
    StringBuilder names = new StringBuilder();
    for (E e : constants) {
      names.append(names.isEmpty() ? "" : " or ").append(e.name().toLowerCase(Locale.ROOT));
    }
    throw invalid(key, text, names.toString(), defaultValue.name().toLowerCase(Locale.ROOT));
  }

  private IllegalArgumentException invalid(
      String key, String text, String expected, Object defaultValue) {
    return new IllegalArgumentException(
        "parameter %s='%s' of workload %s is not valid: expected %s (default %s=%s)"
            .formatted(key, text, workload, expected, key, defaultValue));
  }
}
