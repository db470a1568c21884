package io.kvtier.core.config;

import java.util.Locale;
import java.util.Objects;

/**
 * How a group of ranks splits the model ({@value KvTierKeys#PARALLEL}, {@value
 * KvTierKeys#CP_INTERLEAVE}; {@code --parallel} and {@code --cp-interleave} of the commands). The
 * engine hands it to the model, which lays out each rank's pools and computes accordingly; the
 * replicated radix tree, its pages and the rank protocol are the same either way.
 *
 * <ul>
 *   <li>{@link Mode#TP tp} (tensor parallelism): each rank holds a share of the KV heads and of
 *       the feed-forward rows; its pages hold its heads of every position. The ranks must divide
 *       the KV heads.
 *   <li>{@link Mode#CP cp} (context parallelism): each rank holds the whole weights and, of every
 *       sequence, the KV of its positions only: position {@code p} is rank {@code (p /
 *       interleave) mod ranks}'s. Each rank's page of {@code page-size} tokens
 *       holds {@code page-size / ranks} positions of every head, so its pools take {@code 1/ranks}
 *       of the KV bytes per token. {@code ranks * interleave} must divide the page size.
 * </ul>
 *
 * @param mode tp or cp
 * @param interleave under cp, consecutive positions per rank turn, at least 1 (1 under tp)
 */
public record Parallelism(Mode mode, int interleave) {
  /** Tensor parallelism, the default. */
  public static final Parallelism TP = new Parallelism(Mode.TP, 1);

  /** The two ways. */
  public enum Mode {
    /** Tensor parallelism: a share of the heads per rank. */
    TP,
    /** Context parallelism: a share of the positions per rank. */
    CP
  }

  /**
   * Validates the interleave.
   *
   * @throws IllegalArgumentException if it is below 1, or not 1 under tp, naming the option
   */
  public Parallelism {
    Objects.requireNonNull(mode, "mode");
    if (interleave < 1) {
      throw new IllegalArgumentException(
          "kvtier.cp-interleave="
              + interleave
              + " must be >= 1: the positions a rank takes per turn under --parallel cp");
    }
    if (mode == Mode.TP && interleave != 1) {
      throw new IllegalArgumentException(
          "kvtier.cp-interleave="
              + interleave
              + " is for --parallel cp (kvtier.parallel=cp) only: tensor parallelism splits"
              + " heads, not positions; drop it or set kvtier.parallel=cp");
    }
  }

  /** Context parallelism of {@code interleave} positions per turn. */
  public static Parallelism cp(int interleave) {
    return new Parallelism(Mode.CP, interleave);
  }

  /**
   * {@code tp} or {@code cp}, any case, with the interleave for cp.
   *
   * @throws IllegalArgumentException for another name, naming the choices
   */
  public static Parallelism parse(String name, int interleave) {
    Objects.requireNonNull(name, "name");
    return switch (name.trim().toLowerCase(Locale.ROOT)) {
      case "tp" -> new Parallelism(Mode.TP, interleave);
      case "cp" -> cp(interleave);
      default ->
          throw new IllegalArgumentException(
              "kvtier.parallel="
                  + name
                  + " is neither tp (a share of the KV heads per rank) nor cp (a share of the"
                  + " positions per rank): set --parallel (kvtier.parallel) to tp or cp");
    };
  }

  /** Whether this is context parallelism. */
  public boolean cp() {
    return mode == Mode.CP;
  }

  /** {@code tp} or {@code cp}, the value of {@value KvTierKeys#PARALLEL}. */
  public String configName() {
    return mode.name().toLowerCase(Locale.ROOT);
  }

  @Override
  public String toString() {
    return cp() ? "cp (interleave " + interleave + ")" : "tp";
  }
}
