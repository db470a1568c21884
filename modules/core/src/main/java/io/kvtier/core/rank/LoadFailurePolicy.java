package io.kvtier.core.rank;

import java.util.Locale;

/**
 * What a request does when a load-back its cached prefix needed fails (a copy error, a store
 * error, or host bytes that no longer match their checksum; docs/CACHE.md §10): the failure is
 * agreed across the ranks, so every rank takes the same branch.
 */
public enum LoadFailurePolicy {
  /**
   * The request goes back to the head of the waiting queue and is admitted again: the failed
   * prefix has left the cache, so it is recomputed (or found in L3). A cache fault costs time,
   * never an answer. The default, as vLLM's {@code kv_load_failure_policy=recompute}.
   */
  RECOMPUTE,

  /** The request ends with {@link RequestOutcome#LOAD_FAILED} (a server answers 503). */
  FAIL;

  /**
   * The policy a user named.
   *
   * @param value {@code recompute} or {@code fail}, any case
   * @param option the option or key the value came from, for the message
   * @return the policy
   * @throws IllegalArgumentException naming the option and the values it takes
   */
  public static LoadFailurePolicy parse(String value, String option) {
    String v = value == null ? "" : value.strip().toLowerCase(Locale.ROOT);
    return switch (v) {
      case "recompute" -> RECOMPUTE;
      case "fail" -> FAIL;
      default ->
          throw new IllegalArgumentException(
              option + " " + value + " is not a policy kvtier knows: use recompute or fail");
    };
  }

  /**
   * The name a user writes.
   *
   * @return {@code recompute} or {@code fail}
   */
  public String optionValue() {
    return name().toLowerCase(Locale.ROOT);
  }
}
