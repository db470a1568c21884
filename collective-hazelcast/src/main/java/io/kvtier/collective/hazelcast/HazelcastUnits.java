package io.kvtier.collective.hazelcast;

import java.time.Duration;
import java.util.Locale;

/** Parses and prints the durations and integers of {@link HazelcastConfig} values. */
final class HazelcastUnits {

  private HazelcastUnits() {}

  /**
   * Parses a duration with a unit: {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h}.
   *
   * @param key the key, for the message
   * @param value the raw value
   * @return the duration
   * @throws IllegalArgumentException naming the key and the value when it does not parse
   */
  static Duration parseDuration(String key, String value) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    try {
      if (v.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2).strip()));
      }
      if (v.endsWith("s")) {
        return Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1).strip()));
      }
      if (v.endsWith("m")) {
        return Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1).strip()));
      }
      if (v.endsWith("h")) {
        return Duration.ofHours(Long.parseLong(v.substring(0, v.length() - 1).strip()));
      }
    } catch (NumberFormatException e) {
      // falls through to the message below, which says what a valid value looks like
    }
    throw new IllegalArgumentException(
        key + "=" + value + " is not a duration: write a whole number with a unit ms, s, m or h,"
            + " for example 10s or 500ms");
  }

  /**
   * Prints a duration so that {@link #parseDuration} reads it back: the largest unit that keeps
   * it whole.
   *
   * @param d a duration of whole milliseconds
   * @return for example {@code 10s}
   */
  static String formatDuration(Duration d) {
    long ms = d.toMillis();
    if (ms % 3_600_000 == 0 && ms != 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0 && ms != 0) {
      return ms / 60_000 + "m";
    }
    if (ms % 1000 == 0) {
      return ms / 1000 + "s";
    }
    return ms + "ms";
  }

  /**
   * Parses a decimal integer.
   *
   * @param key the key, for the message
   * @param value the raw value
   * @return the integer
   * @throws IllegalArgumentException naming the key and the value when it does not parse
   */
  static int parseInt(String key, String value) {
    try {
      return Integer.parseInt(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          key + "=" + value + " is not an integer: write a decimal number like 3", e);
    }
  }

  /**
   * The whole seconds of a duration that Hazelcast takes in seconds.
   *
   * @param key the key, for the message
   * @param d the duration
   * @return the seconds, at least 1
   * @throws IllegalArgumentException if the duration is not a positive number of whole seconds
   */
  static int wholeSeconds(String key, Duration d) {
    if (d.toMillis() % 1000 != 0 || d.toSeconds() < 1 || d.toSeconds() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          key + "=" + formatDuration(d) + " must be a positive whole number of seconds (Hazelcast"
              + " counts it in seconds), for example 5s");
    }
    return (int) d.toSeconds();
  }
}
