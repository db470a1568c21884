package io.kvtier.route;

import java.util.Arrays;
import java.util.Locale;

/** How the router picks a replica ({@code kvtier route --policy}). */
public enum RoutePolicy {
  /** The best {@link RouteScore} of cached prefix and load (the router's purpose). */
  PREFIX,
  /**
   * Each request to the next replica in rotation, whatever it caches: the baseline that a
   * cache-blind load balancer gives, to measure prefix routing against.
   */
  ROUND_ROBIN;

  /** The command-line name: {@code prefix}, {@code round-robin}. */
  public String cliName() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /**
   * The policy of a command-line name.
   *
   * @param name {@code prefix} or {@code round-robin}
   * @return the policy
   * @throws IllegalArgumentException naming the choices
   */
  public static RoutePolicy parse(String name) {
    for (RoutePolicy p : values()) {
      if (p.cliName().equals(name)) {
        return p;
      }
    }
    throw new IllegalArgumentException(
        "--policy "
            + name
            + " is not a policy: use one of "
            + Arrays.stream(values()).map(RoutePolicy::cliName).toList());
  }
}
