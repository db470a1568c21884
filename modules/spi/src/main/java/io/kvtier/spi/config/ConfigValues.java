package io.kvtier.spi.config;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Parsing and printing of single configuration values: whole numbers, decimals, booleans, enum
 * names, sizes in bytes, transfer rates and durations, and the "did you mean" of an unknown key.
 * Every parse error is an {@link IllegalArgumentException} whose message starts with {@code
 * key='value'} and says what is accepted. {@link ConfigReader} uses these for its getters; a
 * typed config uses them directly for the parts of a value it splits itself (list entries).
 *
 * <p>Units: sizes are a whole number with {@code B}, {@code KiB}, {@code MiB}, {@code GiB},
 * {@code TiB} (powers of 1024) or {@code KB}, {@code MB}, {@code GB}, {@code TB} (powers of
 * 1000); rates are a number (decimals allowed) with one of those units and {@code /s}, or a
 * plain number of bytes per second; durations are a number (decimals allowed) with {@code ns},
 * {@code us} (or {@code µs}), {@code ms}, {@code s}, {@code m}, {@code h} or {@code d}, or an
 * ISO-8601 duration such as {@code PT30S}; a duration without unit is accepted only for zero.
 * Units are case-insensitive. Decimal prefixes are powers of 1000 as on data sheets, so that a
 * bandwidth copied from a GPU's specification means what it says.
 */
public final class ConfigValues {
  private ConfigValues() {}

  private static final Pattern WHOLE_AMOUNT = Pattern.compile("([0-9]+)\\s*([A-Za-z]*)");

  private static final Pattern AMOUNT =
      Pattern.compile("\\+?([0-9]+(?:\\.[0-9]+)?)\\s*([A-Za-zµ/]*)");

  private static final Map<String, Long> SIZE_UNITS =
      Map.of(
          "",
          1L,
          "b",
          1L,
          "kib",
          1L << 10,
          "mib",
          1L << 20,
          "gib",
          1L << 30,
          "tib",
          1L << 40,
          "kb",
          1_000L,
          "mb",
          1_000_000L,
          "gb",
          1_000_000_000L,
          "tb",
          1_000_000_000_000L);

  private static final Map<String, Long> DURATION_UNITS =
      Map.of(
          "ns", 1L,
          "us", 1_000L,
          "µs", 1_000L,
          "ms", 1_000_000L,
          "s", 1_000_000_000L,
          "m", 60_000_000_000L,
          "h", 3_600_000_000_000L,
          "d", 86_400_000_000_000L);

  private static final BigInteger NANOS_PER_SECOND = BigInteger.valueOf(1_000_000_000L);

  private static final String SIZE_HELP =
      "write a whole number of bytes with an optional unit: B, KiB, MiB, GiB, TiB (powers of"
          + " 1024) or KB, MB, GB, TB (powers of 1000), for example 64MiB";

  private static final String RATE_HELP =
      "write a number with B/s, KB/s, MB/s, GB/s, TB/s (powers of 1000) or KiB/s, MiB/s, GiB/s,"
          + " TiB/s (powers of 1024), for example 25GB/s, or a plain number of bytes per second";

  private static final String DURATION_HELP =
      "write a number with a unit: ns, us, ms, s, m, h or d, for example 30s, 500ms or 1.5us";

  /**
   * Parses a whole number of type {@code int}.
   *
   * @param key the key, for the message
   * @param value the text; surrounding white space is ignored
   * @return the number
   * @throws IllegalArgumentException naming the key and the value if it is not an {@code int}
   */
  public static int parseInt(String key, String value) {
    return parseInt(key, value, Integer.MIN_VALUE, Integer.MAX_VALUE);
  }

  /**
   * Parses a whole number of type {@code int} and checks that it lies in {@code [min, max]}.
   *
   * @param key the key, for the message
   * @param value the text; surrounding white space is ignored
   * @param min the smallest value allowed
   * @param max the largest value allowed
   * @return the number
   * @throws IllegalArgumentException naming the key, the value and the range if it is not a
   *     whole number in the range
   */
  public static int parseInt(String key, String value, int min, int max) {
    int n;
    try {
      n = Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          key + "='" + value + "' is not a whole number (from " + min + " to " + max + ")", e);
    }
    checkRange(key, n, min, max);
    return n;
  }

  /**
   * Checks that {@code n} lies in {@code [min, max]}.
   *
   * @param key the key, for the message
   * @param n the value
   * @param min the smallest value allowed
   * @param max the largest value allowed
   * @throws IllegalArgumentException naming the key, the value and the range if it is outside
   */
  public static void checkRange(String key, long n, long min, long max) {
    if (n >= min && n <= max) {
      return;
    }
    String allowed;
    if (max == Integer.MAX_VALUE || max == Long.MAX_VALUE) {
      allowed = ">= " + min;
    } else if (min == Integer.MIN_VALUE || min == Long.MIN_VALUE) {
      allowed = "<= " + max;
    } else {
      allowed = "in [" + min + ", " + max + "]";
    }
    throw new IllegalArgumentException(key + "=" + n + " must be " + allowed);
  }

  /**
   * Parses a whole number of type {@code long}.
   *
   * @param key the key, for the message
   * @param value the text; surrounding white space is ignored
   * @return the number
   * @throws IllegalArgumentException naming the key and the value if it is not a {@code long}
   */
  public static long parseLong(String key, String value) {
    try {
      return Long.parseLong(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          key
              + "='"
              + value
              + "' is not a whole number (from "
              + Long.MIN_VALUE
              + " to "
              + Long.MAX_VALUE
              + "), such as 42",
          e);
    }
  }

  /**
   * Parses a decimal number as {@link Double#parseDouble} does; range checks are the caller's.
   *
   * @param key the key, for the message
   * @param value the text; surrounding white space is ignored
   * @return the number, possibly infinite or NaN if written so
   * @throws IllegalArgumentException naming the key and the value if it is not a number
   */
  public static double parseDouble(String key, String value) {
    try {
      return Double.parseDouble(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          key + "='" + value + "' is not a number, such as 2 or 2.5", e);
    }
  }

  /**
   * Parses {@code true} or {@code false}, in any case.
   *
   * @param key the key, for the message
   * @param value the text; surrounding white space is ignored
   * @return the boolean
   * @throws IllegalArgumentException naming the key and the value for any other text
   */
  public static boolean parseBoolean(String key, String value) {
    String t = value.strip();
    if (t.equalsIgnoreCase("true")) {
      return true;
    }
    if (t.equalsIgnoreCase("false")) {
      return false;
    }
    throw new IllegalArgumentException(key + "='" + value + "' is not true or false");
  }

  /**
   * Parses the configuration name of an enum constant: its name in any case, with {@code -}
   * accepted for {@code _} ({@code write-back} and {@code WRITE_BACK} are {@code WRITE_BACK}).
   *
   * @param <E> the enum
   * @param type the enum's class
   * @param what what the constants are, for the message, for example {@code "write policy"}
   * @param value the text; surrounding white space is ignored
   * @return the constant
   * @throws IllegalArgumentException naming the value and every accepted name
   */
  public static <E extends Enum<E>> E parseEnum(Class<E> type, String what, String value) {
    Objects.requireNonNull(value, what);
    String normalized = value.strip().toUpperCase(Locale.ROOT).replace('-', '_');
    for (E e : type.getEnumConstants()) {
      if (e.name().equals(normalized)) {
        return e;
      }
    }
    throw new IllegalArgumentException(
        "unknown "
            + what
            + " '"
            + value
            + "': use one of "
            + Arrays.stream(type.getEnumConstants())
                .map(e -> e.name().toLowerCase(Locale.ROOT))
                .collect(Collectors.joining(", ")));
  }

  /**
   * Parses a size such as {@code 64MiB}, {@code 100MB} or {@code 4096}.
   *
   * @param key the key, for the message
   * @param value the text
   * @return the size in bytes, not negative
   * @throws IllegalArgumentException naming the key and the value if it is not a size
   */
  public static long parseBytes(String key, String value) {
    Matcher m = WHOLE_AMOUNT.matcher(value.strip());
    Long unit = m.matches() ? SIZE_UNITS.get(m.group(2).toLowerCase(Locale.ROOT)) : null;
    if (unit == null) {
      throw new IllegalArgumentException(key + "='" + value + "' is not a size: " + SIZE_HELP);
    }
    try {
      return Math.multiplyExact(Long.parseLong(m.group(1)), unit);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(
          key
              + "='"
              + value
              + "' is too large: a size must fit in a signed 64-bit count of"
              + " bytes",
          e);
    }
  }

  /**
   * Parses a transfer rate such as {@code 25GB/s}, {@code 12.5GiB/s} or {@code 1000000} (bytes
   * per second), rounding to a whole number of bytes per second.
   *
   * @param key the key, for the message
   * @param value the text
   * @return bytes per second, at least 1
   * @throws IllegalArgumentException naming the key and the value if it is not a rate or below
   *     one byte per second
   */
  public static long parseRate(String key, String value) {
    Matcher m = AMOUNT.matcher(value.strip());
    Long unit = null;
    if (m.matches()) {
      String suffix = m.group(2).toLowerCase(Locale.ROOT);
      if (suffix.isEmpty()) {
        unit = 1L;
      } else if (suffix.endsWith("/s") && suffix.length() > 2) {
        unit = SIZE_UNITS.get(suffix.substring(0, suffix.length() - 2));
      }
    }
    if (unit == null) {
      throw new IllegalArgumentException(
          key + "='" + value + "' is not a transfer rate: " + RATE_HELP);
    }
    long bytesPerSecond;
    try {
      bytesPerSecond =
          new BigDecimal(m.group(1))
              .multiply(BigDecimal.valueOf(unit))
              .setScale(0, RoundingMode.HALF_UP)
              .longValueExact();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          key
              + "='"
              + value
              + "' is too large: a rate must fit in a signed 64-bit count of"
              + " bytes per second",
          e);
    }
    if (bytesPerSecond < 1) {
      throw new IllegalArgumentException(
          key + "='" + value + "' must be at least 1 byte per second");
    }
    return bytesPerSecond;
  }

  /**
   * Parses a duration such as {@code 30s}, {@code 500ms}, {@code 1.5us}, {@code 2m}, {@code 0}
   * or ISO-8601 {@code PT30S}, rounding to whole nanoseconds.
   *
   * @param key the key, for the message
   * @param value the text
   * @return the duration, not negative
   * @throws IllegalArgumentException naming the key and the value if it is not a duration
   */
  public static Duration parseDuration(String key, String value) {
    String text = value.strip();
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
    BigDecimal amount = new BigDecimal(m.group(1));
    String unit = m.group(2);
    if (unit.isEmpty()) {
      // A bare number is ambiguous (ns? ms? s?) except for zero, which needs no unit.
      if (amount.signum() == 0) {
        return Duration.ZERO;
      }
      throw new IllegalArgumentException(key + "='" + value + "' has no unit: " + DURATION_HELP);
    }
    Long nanosPerUnit = DURATION_UNITS.get(unit.toLowerCase(Locale.ROOT));
    if (nanosPerUnit == null) {
      throw new IllegalArgumentException(
          key + "='" + value + "' has an unknown unit '" + unit + "': " + DURATION_HELP);
    }
    BigInteger nanos =
        amount
            .multiply(BigDecimal.valueOf(nanosPerUnit))
            .setScale(0, RoundingMode.HALF_UP)
            .toBigIntegerExact();
    BigInteger[] secondsAndNanos = nanos.divideAndRemainder(NANOS_PER_SECOND);
    if (secondsAndNanos[0].bitLength() > 63) {
      throw new IllegalArgumentException(key + "='" + value + "' is too long a duration");
    }
    return Duration.ofSeconds(secondsAndNanos[0].longValue(), secondsAndNanos[1].longValue());
  }

  /**
   * Prints a size with the largest power-of-1024 unit that divides it, so that {@link
   * #parseBytes} reads the result back to the same number.
   *
   * @param bytes the size
   * @return for example {@code 64MiB} or {@code 1000}
   */
  public static String formatBytes(long bytes) {
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
   * Prints a duration with the largest unit that divides it, so that {@link #parseDuration}
   * reads the result back to the same duration; one too long for a {@code long} of nanoseconds
   * is printed in ISO-8601.
   *
   * @param duration the duration, not negative
   * @return for example {@code 30s}, {@code 1500ms} or {@code 0ns}
   */
  public static String formatDuration(Duration duration) {
    long nanos;
    try {
      nanos = duration.toNanos();
    } catch (ArithmeticException e) {
      return duration.toString();
    }
    long[] sizes = {
      86_400_000_000_000L, 3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L
    };
    String[] names = {"d", "h", "m", "s", "ms", "us"};
    for (int i = 0; i < sizes.length; i++) {
      if (nanos != 0 && nanos % sizes[i] == 0) {
        return nanos / sizes[i] + names[i];
      }
    }
    return nanos + "ns";
  }

  /**
   * The known key closest in spelling to {@code key}, to suggest a fix for a typo.
   *
   * @param key an unknown key
   * @param known the keys to choose from
   * @return the closest key, or empty if none is close enough to be a typo of it
   */
  public static Optional<String> closest(String key, Collection<String> known) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String candidate : known) {
      int d = distance(key, candidate);
      if (d < bestDistance) {
        bestDistance = d;
        best = candidate;
      }
    }
    // Beyond about a third of the key's name, the "closest" key is a different word, not a typo.
    String name = key.substring(key.indexOf('.') + 1);
    return best != null && bestDistance <= Math.max(2, name.length() / 3)
        ? Optional.of(best)
        : Optional.empty();
  }

  /**
   * The message for a key that no typed config knows: the key, where it was set, the closest
   * known key and every known key of its namespace.
   *
   * @param key the unknown key, {@code namespace.name}
   * @param origin where it was set, for example {@code "file kvtier.properties"}, or empty
   * @param known the keys of the namespace, in documentation order
   * @return the message
   */
  public static String unknownKeyMessage(String key, String origin, List<String> known) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(origin, "origin");
    Objects.requireNonNull(known, "known");
    String namespace = key.indexOf('.') > 0 ? key.substring(0, key.indexOf('.')) : key;
    String message = "unknown key '" + key + "'" + (origin.isEmpty() ? "" : " (in " + origin + ")");
    if (known.isEmpty()) {
      return message + ": the " + namespace + ".* namespace has no keys; remove " + key;
    }
    return message
        + closest(key, known).map(k -> ": did you mean " + k + "? The ").orElse(": the ")
        + namespace
        + ".* keys are: "
        + String.join(", ", known);
  }

  /** Levenshtein distance, two rows. */
  static int distance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return previous[b.length()];
  }
}
