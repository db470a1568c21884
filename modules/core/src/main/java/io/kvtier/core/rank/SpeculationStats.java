package io.kvtier.core.rank;

import java.util.Arrays;
import java.util.Objects;

/**
 * Speculative decoding's counts of one rank ({@link ModelRunner#speculativeTokens}), split by the
 * tier a request's cached prefix came from ({@link Tier}), so that a tier that loses draft state
 * shows as a lower acceptance there. Replicated: every rank counts the same.
 *
 * @param steps verification steps (each proposes at least one token), per {@link Tier#ordinal()}
 * @param proposed draft tokens proposed, per tier
 * @param accepted proposed tokens the target agreed with (kept), per tier
 */
public record SpeculationStats(long[] steps, long[] proposed, long[] accepted) {

  /**
   * Where a request's cached prefix came from: the farthest tier any of it came from (L3 before
   * host before device), {@link #NONE} for a request that matched nothing.
   */
  public enum Tier {
    /** No cached prefix. */
    NONE,
    /** The device tier only. */
    DEVICE,
    /** Some of it loaded back from the host tier (none from L3). */
    HOST,
    /** Some of it fetched from L3. */
    L3;

    /** The metric label: {@code none}, {@code device}, {@code host}, {@code l3}. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }

    static Tier of(int deviceHits, int hostHits, int l3Hits) {
      return l3Hits > 0 ? L3 : hostHits > 0 ? HOST : deviceHits > 0 ? DEVICE : NONE;
    }
  }

  /** Copies the arrays, one entry per tier. */
  public SpeculationStats {
    int n = Tier.values().length;
    if (Objects.requireNonNull(steps, "steps").length != n
        || Objects.requireNonNull(proposed, "proposed").length != n
        || Objects.requireNonNull(accepted, "accepted").length != n) {
      throw new IllegalArgumentException("one count per tier (" + n + ") in each array");
    }
    steps = steps.clone();
    proposed = proposed.clone();
    accepted = accepted.clone();
  }

  /** Verification steps of requests whose prefix came from {@code tier}. */
  public long steps(Tier tier) {
    return steps[tier.ordinal()];
  }

  /** Tokens proposed for requests whose prefix came from {@code tier}. */
  public long proposed(Tier tier) {
    return proposed[tier.ordinal()];
  }

  /** Proposals accepted for requests whose prefix came from {@code tier}. */
  public long accepted(Tier tier) {
    return accepted[tier.ordinal()];
  }

  /** Proposals accepted over proposed, for {@code tier}; 0 when none were proposed. */
  public double acceptanceRate(Tier tier) {
    long p = proposed(tier);
    return p == 0 ? 0 : (double) accepted(tier) / p;
  }

  /** Proposals accepted per verification step, for {@code tier}; 0 without a step. */
  public double meanAcceptedLength(Tier tier) {
    long s = steps(tier);
    return s == 0 ? 0 : (double) accepted(tier) / s;
  }

  /** Steps over every tier. */
  public long totalSteps() {
    return Arrays.stream(steps).sum();
  }

  /** Proposals over every tier. */
  public long totalProposed() {
    return Arrays.stream(proposed).sum();
  }

  /** Accepted proposals over every tier. */
  public long totalAccepted() {
    return Arrays.stream(accepted).sum();
  }

  /** Accepted over proposed, every tier; 0 when none were proposed. */
  public double acceptanceRate() {
    long p = totalProposed();
    return p == 0 ? 0 : (double) totalAccepted() / p;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SpeculationStats s
        && Arrays.equals(steps, s.steps)
        && Arrays.equals(proposed, s.proposed)
        && Arrays.equals(accepted, s.accepted);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        Arrays.hashCode(steps), Arrays.hashCode(proposed), Arrays.hashCode(accepted));
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("SpeculationStats[");
    for (Tier t : Tier.values()) {
      b.append(t.label())
          .append(": ")
          .append(accepted(t))
          .append('/')
          .append(proposed(t))
          .append(" in ")
          .append(steps(t))
          .append(t == Tier.L3 ? "]" : ", ");
    }
    return b.toString();
  }
}
