package io.kvtier.collective.mpi.internal;

import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * How this process was started, from the environment variables Open MPI's launcher sets: by
 * {@code mpirun} (or a PMIx-enabled resource manager) as one rank of a job, or on its own, in
 * which case {@code MPI_Init} makes it a "singleton" job of one rank.
 *
 * @param launched whether a launcher started the process
 * @param rank the rank the launcher assigned, when it says
 * @param size the job's number of ranks, when it says
 */
public record MpiLaunch(boolean launched, OptionalInt rank, OptionalInt size) {

  /** Validates the fields. */
  public MpiLaunch {
    Objects.requireNonNull(rank, "rank");
    Objects.requireNonNull(size, "size");
  }

  /**
   * Reads the launcher's variables.
   *
   * @param environment the process environment
   * @return what the launcher said, or not launched
   */
  public static MpiLaunch from(Map<String, String> environment) {
    boolean launched =
        MpiOpenMpiAbi.LAUNCHER_VARIABLES.stream()
            .anyMatch(v -> environment.get(v) != null && !environment.get(v).isBlank());
    OptionalInt rank = number(environment.get("OMPI_COMM_WORLD_RANK"));
    if (rank.isEmpty()) {
      rank = number(environment.get("PMIX_RANK"));
    }
    return new MpiLaunch(launched, rank, number(environment.get("OMPI_COMM_WORLD_SIZE")));
  }

  private static OptionalInt number(String value) {
    if (value == null) {
      return OptionalInt.empty();
    }
    try {
      return OptionalInt.of(Integer.parseInt(value.strip()));
    } catch (NumberFormatException e) {
      return OptionalInt.empty();
    }
  }

  /**
   * A phrase for the availability detail and the start-up warning.
   *
   * @return where this rank is, or why it runs alone
   */
  public String describe() {
    if (!launched) {
      return "not started by mpirun, so this process runs as a single rank (an MPI"
          + " singleton); start the ranks with `mpirun -np N java"
          + " --enable-native-access="
          + MpiProbe.MODULE
          + " ...`";
    }
    return "started by mpirun as rank "
        + (rank.isPresent() ? rank.getAsInt() : "?")
        + " of "
        + (size.isPresent() ? size.getAsInt() : "?");
  }
}
