package io.kvtier.serving;

import io.kvtier.core.config.Parallelism;
import io.kvtier.spi.Collective;
import io.kvtier.spi.PageMemory;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * One rank's part of a served model, as {@link ServingModel#openRunner} gets it: the rank, the
 * group's size, the rank's device pool (its shard of the KV heads) and the engine's handle on
 * the group's collective, known once the engine is built. A tensor-parallel model sums its
 * partial outputs through that handle, so that the sums join the engine's schedule and a rank
 * that fails stops the others at that very call.
 */
public final class RankShard {
  private final int rank;
  private final int ranks;
  private final PageMemory device;
  private final Parallelism parallelism;
  private final List<Consumer<Collective>> joined = new ArrayList<>();
  private Collective collective;

  RankShard(int rank, int ranks, Parallelism parallelism, PageMemory device) {
    Objects.checkIndex(rank, ranks);
    this.rank = rank;
    this.ranks = ranks;
    this.parallelism = Objects.requireNonNull(parallelism, "parallelism");
    this.device = Objects.requireNonNull(device, "device");
  }

  /**
   * How the group splits the model ({@code kvtier.parallel}): by KV heads or by positions.
   *
   * @return the config's parallelism
   */
  public Parallelism parallelism() {
    return parallelism;
  }

  /**
   * This rank.
   *
   * @return in {@code [0, ranks())}
   */
  public int rank() {
    return rank;
  }

  /**
   * The ranks of the group, each holding {@code kvHeads / ranks} heads (tp) or {@code 1/ranks}
   * of each sequence's positions (cp).
   *
   * @return at least 1
   */
  public int ranks() {
    return ranks;
  }

  /**
   * The rank's device pool, with its KV layout ({@link ServingModel#rankLayout}).
   *
   * @return the pool
   */
  public PageMemory device() {
    return device;
  }

  /**
   * Calls {@code action} with the engine's collective once the engine is built, before its first
   * step (at once if it is built already).
   *
   * @param action given the engine's handle on the group
   */
  public void whenJoined(Consumer<Collective> action) {
    Objects.requireNonNull(action, "action");
    if (collective != null) {
      action.accept(collective);
    } else {
      joined.add(action);
    }
  }

  /** The engine is built: hands its collective to those waiting for it. */
  void join(Collective engineCollective) {
    collective = Objects.requireNonNull(engineCollective, "collective");
    for (Consumer<Collective> action : joined) {
      action.accept(collective);
    }
    joined.clear();
  }
}
