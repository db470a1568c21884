package io.kvtier.bench;

import java.util.Objects;

/** Creates replay targets by name, for the {@code target} parameter of the benchmarks. */
public final class ReplayTargets {

  /** The names {@link #create} accepts. */
  public static final String NAMES = "reference, kvtier";

  private ReplayTargets() {}

  /**
   * A new, empty target.
   *
   * @param name {@code reference} (SGLang's semantics in plain Java) or {@code kvtier} (the
   *     engine)
   * @param pageSize tokens per page, at least 1
   * @param capacityTokens slots of the token pool, or {@link ReferenceRadixCache#UNBOUNDED}
   * @return the target
   */
  public static ReplayTarget create(String name, int pageSize, long capacityTokens) {
    Objects.requireNonNull(name, "name");
    return switch (name) {
      case "reference" -> new ReferenceRadixCache(pageSize, capacityTokens);
      case "kvtier" -> new KvtierReplayTarget(pageSize, capacityTokens);
      default ->
          throw new IllegalArgumentException(
              "unknown replay target '" + name + "': known targets are " + NAMES);
    };
  }

  /**
   * Parses a capacity parameter.
   *
   * @param text {@code unbounded} or a number of tokens, at least 1
   * @return the capacity in tokens, {@link ReferenceRadixCache#UNBOUNDED} for unbounded
   */
  public static long capacity(String text) {
    Objects.requireNonNull(text, "text");
    if (text.equals("unbounded")) {
      return ReferenceRadixCache.UNBOUNDED;
    }
    try {
      long v = Long.parseLong(text);
      if (v >= 1) {
        return v;
      }
    } catch (NumberFormatException e) {
      // fall through to the message below
    }
    throw new IllegalArgumentException(
        "capacity '" + text + "' is not valid: give 'unbounded' or a number of tokens >= 1");
  }
}
