package io.kvtier.examples;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderKind;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One program, any backends: which device and host pools, collective and L3 store serve it is
 * decided by the module path (which provider modules are on it) and the configuration ({@code
 * kvtier.device}, {@code kvtier.host}, {@code kvtier.collective}, {@code kvtier.store}, given as
 * {@code key=value} arguments), never by the code. With the {@code local} collective every rank
 * is a thread of this process; with {@code mpi} or {@code hazelcast} each process is one rank,
 * named by {@code --rank=N} (under {@code mpirun} by the launcher). examples/README.md shows the
 * command lines.
 */
public final class BackendSwapExample {
  private BackendSwapExample() {}

  /**
   * Runs the example and prints one line per rank of this process.
   *
   * @param args {@code key=value} settings, and {@code --rank=N} for one rank per process
   */
  public static void main(String... args) {
    run(List.of(args)).forEach(r -> System.out.println(RankLoop.describe(r)));
  }

  /**
   * Runs this process's ranks with the settings of {@code args}.
   *
   * @param args {@code key=value} settings (kvtier or backend keys), and {@code --rank=N} for
   *     one rank per process
   * @return the result of each rank this process ran
   * @throws IllegalArgumentException for an argument that is neither, an unknown key, or a rank
   *     that does not fit the collective
   */
  public static List<RankLoop.RankResult> run(List<String> args) {
    Map<String, String> settings = new LinkedHashMap<>();
    Integer rank = null;
    for (String arg : Objects.requireNonNull(args, "args")) {
      if (arg.startsWith("--rank=")) {
        rank = Integer.parseInt(arg.substring("--rank=".length()));
        continue;
      }
      int eq = arg.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException(
            "'"
                + arg
                + "' is not key=value or --rank=N: give"
                + " settings such as kvtier.device=cuda kvtier.collective=local");
      }
      settings.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    KvTierConfig config = RankLoop.config(settings);
    String collective = config.provider(ProviderKind.COLLECTIVE);
    if (collective.equals("local")) {
      if (rank != null) {
        throw new IllegalArgumentException(
            "--rank="
                + rank
                + " is for one rank per process"
                + " (kvtier.collective=mpi or hazelcast); with local every rank is a thread: drop it");
      }
      return RankLoop.runAsThreads(config);
    }
    int me = rank != null ? rank : launcherRank();
    if (me < 0 || me >= config.ranks()) {
      throw new IllegalArgumentException(
          "rank "
              + me
              + " is outside kvtier.ranks="
              + config.ranks()
              + ": give --rank=0.."
              + (config.ranks() - 1));
    }
    return List.of(RankLoop.runRank(config, me, "backend-swap"));
  }

  // mpirun names each process's rank in its environment; elsewhere one process is rank 0.
  private static int launcherRank() {
    String rank = System.getenv("OMPI_COMM_WORLD_RANK");
    if (rank == null) {
      rank = System.getenv("PMIX_RANK");
    }
    return rank == null ? 0 : Integer.parseInt(rank);
  }
}
