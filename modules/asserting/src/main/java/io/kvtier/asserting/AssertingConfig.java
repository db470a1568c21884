package io.kvtier.asserting;

import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The configuration of the {@code asserting} providers, from the keys of namespace {@value
 * #NAMESPACE}:
 *
 * <ul>
 *   <li>{@code asserting.delegate}: the name of the wrapped provider (default {@value
 *       #DEFAULT_DELEGATE});
 *   <li>{@code asserting.faults}: {@code true} wraps every transfer engine in a {@link
 *       FaultyTransferEngine} (default false), with {@code asserting.fault.seed} (default 0),
 *       {@code asserting.fault.fail-probability}, {@code asserting.fault.slow-probability},
 *       {@code asserting.fault.stuck-probability} (default 0 each) and {@code
 *       asserting.fault.slow-delay} (a duration such as {@code 5ms}, default 1ms);
 *   <li>{@code asserting.<delegate namespace>.<key>}: handed to the delegate as {@code <delegate
 *       namespace>.<key>}, for example {@code asserting.sim.h2d-bandwidth}.
 * </ul>
 *
 * Any other key is an error.
 *
 * @param delegate the wrapped provider's name
 * @param faults the faults to inject, or empty for no fault-injecting wrapper
 * @param forwarded the remaining keys with the {@code asserting.} prefix removed
 */
public record AssertingConfig(
    String delegate, Optional<FaultPlan> faults, Map<String, String> forwarded) {

  /** The configuration namespace of the asserting providers. */
  public static final String NAMESPACE = "asserting";

  /** The delegate used when {@code asserting.delegate} is absent. */
  public static final String DEFAULT_DELEGATE = "sim";

  /** Default of {@code asserting.fault.slow-delay}. */
  public static final Duration DEFAULT_SLOW_DELAY = Duration.ofMillis(1);

  /** Validates and copies the fields. */
  public AssertingConfig {
    Objects.requireNonNull(delegate, "delegate");
    Objects.requireNonNull(faults, "faults");
    forwarded = Map.copyOf(Objects.requireNonNull(forwarded, "forwarded"));
    if (delegate.isBlank() || delegate.equals(NAMESPACE)) {
      throw new IllegalArgumentException(
          "asserting.delegate='" + delegate + "' must name another provider, such as sim");
    }
  }

  /**
   * Parses the properties handed to an asserting provider.
   *
   * @param properties the keys of the {@code asserting} namespace with their values
   * @param delegateNamespace maps a delegate's name to its configuration namespace
   * @return the configuration
   * @throws IllegalArgumentException for an unknown key or a bad value, naming it
   */
  public static AssertingConfig parse(
      Map<String, String> properties,
      java.util.function.Function<String, String> delegateNamespace) {
    Map<String, String> rest = new HashMap<>(properties);
    String delegate =
        Optional.ofNullable(rest.remove("asserting.delegate"))
            .map(String::strip)
            .orElse(DEFAULT_DELEGATE);
    boolean faultsOn = parseBoolean(rest.remove("asserting.faults"), "asserting.faults");
    long seed = parseLong(rest.remove("asserting.fault.seed"), "asserting.fault.seed");
    double fail =
        parseDouble(
            rest.remove("asserting.fault.fail-probability"), "asserting.fault.fail-probability");
    double slow =
        parseDouble(
            rest.remove("asserting.fault.slow-probability"), "asserting.fault.slow-probability");
    double stuck =
        parseDouble(
            rest.remove("asserting.fault.stuck-probability"), "asserting.fault.stuck-probability");
    Duration delay =
        Optional.ofNullable(rest.remove("asserting.fault.slow-delay"))
            .map(v -> parseDuration(v, "asserting.fault.slow-delay"))
            .orElse(DEFAULT_SLOW_DELAY);
    String prefix = NAMESPACE + "." + delegateNamespace.apply(delegate) + ".";
    Map<String, String> forwarded = new HashMap<>();
    for (Map.Entry<String, String> e : rest.entrySet()) {
      if (!e.getKey().startsWith(prefix)) {
        throw new IllegalArgumentException(
            "unknown key "
                + e.getKey()
                + "="
                + e.getValue()
                + ": the asserting providers know"
                + " asserting.delegate, asserting.faults, asserting.fault.{seed,"
                + "fail-probability,slow-probability,stuck-probability,slow-delay} and keys "
                + prefix
                + "* for the delegate '"
                + delegate
                + "'");
      }
      forwarded.put(e.getKey().substring(NAMESPACE.length() + 1), e.getValue());
    }
    FaultPlan plan;
    try {
      plan = new FaultPlan(seed, fail, slow, delay, stuck);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("asserting.fault.*: " + e.getMessage(), e);
    }
    return new AssertingConfig(
        delegate, faultsOn ? Optional.of(plan) : Optional.empty(), forwarded);
  }

  private static boolean parseBoolean(String v, String key) {
    if (v == null) {
      return false;
    }
    return switch (v.strip().toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException(key + "='" + v + "' must be true or false");
    };
  }

  private static long parseLong(String v, String key) {
    if (v == null) {
      return 0;
    }
    try {
      return Long.parseLong(v.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + "='" + v + "' must be an integer", e);
    }
  }

  private static double parseDouble(String v, String key) {
    if (v == null) {
      return 0;
    }
    try {
      return Double.parseDouble(v.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + "='" + v + "' must be a number between 0 and 1", e);
    }
  }

  /** Parses {@code <integer><unit>} with unit ns, us, ms or s. */
  static Duration parseDuration(String v, String key) {
    String s = v.strip().toLowerCase(Locale.ROOT);
    int split = 0;
    while (split < s.length() && Character.isDigit(s.charAt(split))) {
      split++;
    }
    String unit = s.substring(split);
    if (split == 0 || split > 18) {
      throw new IllegalArgumentException(
          key + "='" + v + "' must be a duration such as 500us, 5ms or 2s");
    }
    long n = Long.parseLong(s.substring(0, split));
    return switch (unit) {
      case "ns" -> Duration.ofNanos(n);
      case "us" -> Duration.ofNanos(Math.multiplyExact(n, 1_000L));
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      default ->
          throw new IllegalArgumentException(
              key + "='" + v + "' has unit '" + unit + "': use ns, us, ms or s, such as 5ms");
    };
  }
}
