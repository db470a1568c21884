package io.kvtier.serving;

import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A model's options by name, read with their types: each read removes the name from those not
 * yet read, so that {@link #checkAllRead} can refuse a name the model does not know.
 */
public final class ModelOptions {
  private final Map<String, String> values;
  private final Set<String> unread;

  /**
   * Options of given values.
   *
   * @param values name to value; copied
   */
  public ModelOptions(Map<String, String> values) {
    this.values = new TreeMap<>(Objects.requireNonNull(values, "values"));
    this.unread = new TreeSet<>(this.values.keySet());
  }

  /**
   * A string option.
   *
   * @param name the option
   * @param fallback the value when absent
   * @return the value
   */
  public String string(String name, String fallback) {
    unread.remove(name);
    String v = values.get(name);
    return v == null ? fallback : v.strip();
  }

  /**
   * An integer option.
   *
   * @param name the option
   * @param fallback the value when absent
   * @return the value
   * @throws IllegalArgumentException if it is not an integer
   */
  public int integer(String name, int fallback) {
    String v = string(name, null);
    if (v == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "model option " + name + "=" + v + " is not an integer: give a whole number", e);
    }
  }

  /**
   * A boolean option ({@code true} or {@code false}).
   *
   * @param name the option
   * @param fallback the value when absent
   * @return the value
   * @throws IllegalArgumentException if it is neither
   */
  public boolean flag(String name, boolean fallback) {
    String v = string(name, null);
    if (v == null) {
      return fallback;
    }
    return switch (v) {
      case "true" -> true;
      case "false" -> false;
      default ->
          throw new IllegalArgumentException(
              "model option " + name + "=" + v + " is not a boolean: give true or false");
    };
  }

  /**
   * Refuses any option no read asked for.
   *
   * @param model the model's name, for the message
   * @throws IllegalArgumentException naming the unknown options
   */
  public void checkAllRead(String model) {
    if (!unread.isEmpty()) {
      throw new IllegalArgumentException(
          "model " + model + " has no option(s) " + unread + ": drop them");
    }
  }
}
