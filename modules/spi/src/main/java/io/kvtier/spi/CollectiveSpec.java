package io.kvtier.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * Which group to join and how long a collective may take.
 *
 * @param group the group's name; ranks with the same name join the same group
 * @param worldSize number of ranks, or empty when the launcher decides (MPI)
 * @param rank this rank, or empty when the launcher decides (MPI)
 * @param watchdogTimeout how long one collective call may wait before it fails with {@link
 *     CollectiveTimeoutException}; positive
 */
public record CollectiveSpec(
    String group, OptionalInt worldSize, OptionalInt rank, Duration watchdogTimeout) {

  /** Validates the fields. */
  public CollectiveSpec {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(worldSize, "worldSize");
    Objects.requireNonNull(rank, "rank");
    Objects.requireNonNull(watchdogTimeout, "watchdogTimeout");
    if (group.isBlank()) {
      throw new IllegalArgumentException("group name is blank");
    }
    if (worldSize.isPresent() && worldSize.getAsInt() < 1) {
      throw new IllegalArgumentException("worldSize=" + worldSize.getAsInt() + " must be >= 1");
    }
    if (rank.isPresent()) {
      int r = rank.getAsInt();
      if (r < 0 || (worldSize.isPresent() && r >= worldSize.getAsInt())) {
        throw new IllegalArgumentException(
            "rank=" + r + " must be in [0, worldSize=" + worldSize + ")");
      }
    }
    if (watchdogTimeout.isNegative() || watchdogTimeout.isZero()) {
      throw new IllegalArgumentException(
          "watchdogTimeout=" + watchdogTimeout + " must be positive");
    }
  }

  /**
   * A spec with explicit world size and rank.
   *
   * @param group group name
   * @param worldSize number of ranks
   * @param rank this rank
   * @param watchdogTimeout the watchdog bound
   * @return the spec
   */
  public static CollectiveSpec of(String group, int worldSize, int rank, Duration watchdogTimeout) {
    return new CollectiveSpec(
        group, OptionalInt.of(worldSize), OptionalInt.of(rank), watchdogTimeout);
  }
}
