package io.kvtier.core.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parsing and printing of configuration values with units: sizes and durations. */
final class Units {
  private Units() {}

  private static final Pattern AMOUNT = Pattern.compile("([0-9]+)\\s*([A-Za-z]*)");

  private static final Map<String, Long> SIZE_UNITS =
      Map.of(
          "", 1L, "b", 1L,
          "kib", 1L << 10, "mib", 1L << 20, "gib", 1L << 30, "tib", 1L << 40,
          "kb", 1_000L, "mb", 1_000_000L, "gb", 1_000_000_000L, "tb", 1_000_000_000_000L);

  private static final String SIZE_HELP =
      "write a whole number of bytes with an optional unit: B, KiB, MiB, GiB, TiB (powers of"
          + " 1024) or KB, MB, GB, TB (powers of 1000), for example 64MiB";

  private static final String DURATION_HELP =
      "write a whole number with a unit: ns, us, ms, s, m, h or d, for example 30s or 500ms";

  /**
   * Parses a size such as {@code 64MiB}, {@code 100MB} or {@code 4096}.
   *
   * @param key the key, for the message
   * @param value the text
   * @return the size in bytes, not negative
   * @throws IllegalArgumentException naming the key and the value if it is not a size
   */
  static long parseBytes(String key, String value) {
    Matcher m = AMOUNT.matcher(value.trim());
    Long unit = m.matches() ? SIZE_UNITS.get(m.group(2).toLowerCase(Locale.ROOT)) : null;
    if (unit == null) {
      throw new IllegalArgumentException(key + "='" + value + "' is not a size: " + SIZE_HELP);
    }
    try {
      return Math.multiplyExact(Long.parseLong(m.group(1)), unit);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(
          key + "='" + value + "' is too large: a size must fit in a signed 64-bit count of"
              + " bytes",
          e);
    }
  }

  /**
   * Parses a duration such as {@code 30s}, {@code 500ms}, {@code 2m} or ISO-8601 {@code PT30S}.
   *
   * @param key the key, for the message
   * @param value the text
   * @return the duration, not negative
   * @throws IllegalArgumentException naming the key and the value if it is not a duration
   */
  static Duration parseDuration(String key, String value) {
    String text = value.trim();
    if (text.startsWith("P") || text.startsWith("p")) {
      try {
        Duration d = Duration.parse(text);
        if (!d.isNegative()) {
          return d;
        }
      } catch (DateTimeParseException e) {
        // fall through to the message below, which names the accepted forms
      }
      throw new IllegalArgumentException(
          key + "='" + value + "' is not a duration: " + DURATION_HELP);
    }
    Matcher m = AMOUNT.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          key + "='" + value + "' is not a duration: " + DURATION_HELP);
    }
    if (m.group(2).isEmpty()) {
      throw new IllegalArgumentException(
          key + "='" + value + "' has no unit: " + DURATION_HELP);
    }
    try {
      long amount = Long.parseLong(m.group(1));
      return switch (m.group(2).toLowerCase(Locale.ROOT)) {
        case "ns" -> Duration.ofNanos(amount);
        case "us" -> Duration.ofNanos(Math.multiplyExact(amount, 1_000L));
        case "ms" -> Duration.ofMillis(amount);
        case "s" -> Duration.ofSeconds(amount);
        case "m" -> Duration.ofMinutes(amount);
        case "h" -> Duration.ofHours(amount);
        case "d" -> Duration.ofDays(amount);
        default ->
            throw new IllegalArgumentException(
                key + "='" + value + "' has an unknown unit '" + m.group(2) + "': "
                    + DURATION_HELP);
      };
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(key + "='" + value + "' is too long a duration", e);
    }
  }

  /**
   * Prints a size with the largest power-of-1024 unit that divides it, so that parsing the
   * result gives the same number.
   *
   * @param bytes the size
   * @return for example {@code 64MiB} or {@code 1000}
   */
  static String formatBytes(long bytes) {
    String[] units = {"TiB", "GiB", "MiB", "KiB"};
    for (int i = 0; i < units.length; i++) {
      long unit = 1L << (40 - 10 * i);
      if (bytes != 0 && bytes % unit == 0) {
        return bytes / unit + units[i];
      }
    }
    return Long.toString(bytes);
  }

  /**
   * Prints a duration with the largest unit that divides it, so that parsing the result gives
   * the same duration.
   *
   * @param duration the duration, not negative
   * @return for example {@code 30s} or {@code 1500ms}
   */
  static String formatDuration(Duration duration) {
    long nanos;
    try {
      nanos = duration.toNanos();
    } catch (ArithmeticException e) {
      return duration.toString();
    }
    long[] sizes = {86_400_000_000_000L, 3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L,
        1_000_000L, 1_000L};
    String[] names = {"d", "h", "m", "s", "ms", "us"};
    for (int i = 0; i < sizes.length; i++) {
      if (nanos != 0 && nanos % sizes[i] == 0) {
        return nanos / sizes[i] + names[i];
      }
    }
    return nanos + "ns";
  }
}
