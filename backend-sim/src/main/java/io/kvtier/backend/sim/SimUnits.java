package io.kvtier.backend.sim;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the unit-carrying values of {@link SimConfig}: transfer rates ({@code 25GB/s}, {@code
 * 12.5GiB/s}, or a plain number of bytes per second) and durations ({@code 5us}, {@code 2ms}).
 * Decimal prefixes are powers of 1000 and binary ones ({@code KiB}, {@code GiB}) powers of 1024,
 * as on data sheets, so that a bandwidth copied from a GPU spec means what it says.
 */
final class SimUnits {

  private static final Pattern NUMBER_AND_UNIT =
      Pattern.compile("\\s*([0-9]+(?:\\.[0-9]+)?)\\s*([A-Za-zµ/]*)\\s*");

  private static final Map<String, Long> RATE_UNITS =
      Map.ofEntries(
          Map.entry("", 1L),
          Map.entry("b/s", 1L),
          Map.entry("kb/s", 1_000L),
          Map.entry("mb/s", 1_000_000L),
          Map.entry("gb/s", 1_000_000_000L),
          Map.entry("tb/s", 1_000_000_000_000L),
          Map.entry("kib/s", 1L << 10),
          Map.entry("mib/s", 1L << 20),
          Map.entry("gib/s", 1L << 30),
          Map.entry("tib/s", 1L << 40));

  private static final Map<String, Long> DURATION_UNITS =
      Map.of(
          "ns", 1L,
          "us", 1_000L,
          "µs", 1_000L,
          "ms", 1_000_000L,
          "s", 1_000_000_000L);

  private SimUnits() {}

  /**
   * Parses a transfer rate.
   *
   * @param key the property key, for messages
   * @param value for example {@code 25GB/s}, {@code 16GiB/s} or {@code 1000000} (bytes per second)
   * @return bytes per second, at least 1
   */
  static long parseRate(String key, String value) {
    Matcher m = NUMBER_AND_UNIT.matcher(value);
    Long unit = m.matches() ? RATE_UNITS.get(m.group(2).toLowerCase(Locale.ROOT)) : null;
    if (unit == null) {
      throw new IllegalArgumentException(
          key + "=" + value + " is not a transfer rate: write a number with B/s, KB/s, MB/s,"
              + " GB/s, TB/s (powers of 1000) or KiB/s, MiB/s, GiB/s, TiB/s (powers of 1024),"
              + " for example 25GB/s, or a plain number of bytes per second");
    }
    long bytesPerSecond = scale(key, value, m.group(1), unit);
    if (bytesPerSecond < 1) {
      throw new IllegalArgumentException(
          key + "=" + value + " must be at least 1 byte per second");
    }
    return bytesPerSecond;
  }

  /**
   * Parses a duration.
   *
   * @param key the property key, for messages
   * @param value for example {@code 5us}, {@code 2ms}, {@code 100ns}, {@code 1s}, or {@code 0}
   * @return the duration, not negative
   */
  static Duration parseDuration(String key, String value) {
    Matcher m = NUMBER_AND_UNIT.matcher(value);
    Long unit = null;
    if (m.matches()) {
      String suffix = m.group(2).toLowerCase(Locale.ROOT);
      // A bare number is ambiguous (ns? ms?) except for zero, which needs no unit.
      unit = suffix.isEmpty() && new BigDecimal(m.group(1)).signum() == 0 ? Long.valueOf(1L)
          : DURATION_UNITS.get(suffix);
    }
    if (unit == null) {
      throw new IllegalArgumentException(
          key + "=" + value + " is not a duration: write a number with ns, us, ms or s,"
              + " for example 5us or 2ms");
    }
    return Duration.ofNanos(scale(key, value, m.group(1), unit));
  }

  /**
   * Formats a rate so that {@link #parseRate} reads it back exactly.
   *
   * @param bytesPerSecond the rate
   * @return the rate as a plain number of bytes per second
   */
  static String formatRate(long bytesPerSecond) {
    return Long.toString(bytesPerSecond);
  }

  /**
   * Formats a duration so that {@link #parseDuration} reads it back exactly.
   *
   * @param duration the duration
   * @return the duration in nanoseconds, with the unit
   */
  static String formatDuration(Duration duration) {
    return duration.toNanos() + "ns";
  }

  private static long scale(String key, String value, String number, long unit) {
    try {
      return new BigDecimal(number)
          .multiply(BigDecimal.valueOf(unit))
          .setScale(0, RoundingMode.HALF_UP)
          .longValueExact();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(key + "=" + value + " is too large for a long", e);
    }
  }
}
