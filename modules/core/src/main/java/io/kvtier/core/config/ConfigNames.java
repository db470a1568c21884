package io.kvtier.core.config;

import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.stream.Collectors;

/** Parsing of enum-valued configuration names. */
final class ConfigNames {
  private ConfigNames() {}

  static <E extends Enum<E>> E parse(Class<E> type, String what, String value) {
    Objects.requireNonNull(value, what);
    String normalized = value.trim().toUpperCase(Locale.ROOT).replace('-', '_');
    for (E e : type.getEnumConstants()) {
      if (e.name().equals(normalized)) {
        return e;
      }
    }
    throw new IllegalArgumentException(
        "unknown " + what + " '" + value + "': use one of "
            + Arrays.stream(type.getEnumConstants())
                .map(e -> e.name().toLowerCase(Locale.ROOT))
                .collect(Collectors.joining(", ")));
  }
}
