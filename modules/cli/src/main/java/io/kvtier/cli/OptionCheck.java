package io.kvtier.cli;

import java.util.Locale;
import java.util.function.Function;

/**
 * Checks of option values that a command runs before it builds its configuration, so that an
 * error names the option as the user typed it ({@code --chunk}, not the builder's {@code
 * chunkTokens}) and says what it accepts. Each check throws {@link IllegalArgumentException}; the
 * command turns it into a usage error.
 */
final class OptionCheck {
  private OptionCheck() {}

  /**
   * Requires {@code value >= min}.
   *
   * @param option the option, for example {@code --chunk}
   * @param value its value
   * @param min the least value accepted
   * @param what what the option sets, for the message
   */
  static void atLeast(String option, long value, long min, String what) {
    if (value < min) {
      throw outOfRange(option, value, "give " + min + " or more", what);
    }
  }

  /**
   * Requires {@code min <= value <= max}.
   *
   * @param option the option
   * @param value its value
   * @param min the least value accepted
   * @param max the largest value accepted
   * @param what what the option sets, for the message
   */
  static void between(String option, long value, long min, long max, String what) {
    if (value < min || value > max) {
      throw outOfRange(option, value, "give " + min + " to " + max, what);
    }
  }

  /**
   * Requires a probability, 0 to 1.
   *
   * @param option the option
   * @param value its value
   * @param what what the option sets, for the message
   */
  static void probability(String option, double value, String what) {
    if (!(value >= 0 && value <= 1)) {
      throw outOfRange(option, format(value), "give 0 to 1", what);
    }
  }

  /**
   * Requires a finite value of at least {@code min}.
   *
   * @param option the option
   * @param value its value
   * @param min the least value accepted
   * @param what what the option sets, for the message
   */
  static void finiteAtLeast(String option, double value, double min, String what) {
    if (!(value >= min) || Double.isInfinite(value)) {
      throw outOfRange(option, format(value), "give " + format(min) + " or more", what);
    }
  }

  /**
   * Parses a named value with the parser of its type, naming the option in the error.
   *
   * @param option the option
   * @param value its value
   * @param parser the type's parser; its message lists the names it accepts
   * @param <T> the type
   * @return the parsed value
   */
  static <T> T parse(String option, String value, Function<String, T> parser) {
    try {
      return parser.apply(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(option + "=" + value + ": " + e.getMessage(), e);
    }
  }

  private static IllegalArgumentException outOfRange(
      String option, Object value, String range, String what) {
    return new IllegalArgumentException(
        option + "=" + value + " is out of range: " + range + " (" + what + ")");
  }

  private static String format(double value) {
    return value == Math.rint(value) && !Double.isInfinite(value)
        ? String.valueOf((long) value)
        : String.format(Locale.ROOT, "%s", value);
  }
}
