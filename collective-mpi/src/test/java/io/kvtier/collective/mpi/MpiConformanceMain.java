package io.kvtier.collective.mpi;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import io.kvtier.testkit.conformance.CollectiveChecks;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * The collective conformance checks as one rank of an {@code mpirun} job, since MPI runs one rank
 * per process and the thread-based suite cannot. Runs every {@link CollectiveChecks.Check} (the
 * desync checks each on a fresh join, since a desync breaks the group), then the checks of the
 * MPI join: a spec that contradicts mpirun fails every rank, another group name is refused, and
 * a join after all that failure works. Prints one line per check,
 * {@code mpi-conformance rank=R size=N check=NAME PASS} (or {@code FAIL: why}), then a {@code DONE}
 * line, and exits 0 iff every check passed.
 *
 * <pre>{@code
 * mpirun -np 4 java ... -m io.kvtier.collective.mpi/io.kvtier.collective.mpi.MpiConformanceMain \
 *   --seed 42 --arrivals /tmp/empty-dir
 * }</pre>
 */
public final class MpiConformanceMain {

  private static final String GROUP = "mpi-conformance";
  private static final Duration WATCHDOG = Duration.ofSeconds(60);

  private final MpiCollectiveProvider provider = new MpiCollectiveProvider();
  private final List<String> failures = new ArrayList<>();
  private int passed;
  private int rank = -1;
  private int size = -1;

  private MpiConformanceMain() {}

  /**
   * Runs the checks as this process's rank.
   *
   * @param args {@code --seed N --arrivals DIR}
   */
  public static void main(String[] args) {
    long seed = 0;
    Path arrivals = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--seed" -> seed = Long.parseLong(args[i + 1]);
        case "--arrivals" -> arrivals = Path.of(args[i + 1]);
        default ->
            throw new IllegalArgumentException(
                "unknown option " + args[i] + "; usage: --seed N --arrivals DIR");
      }
    }
    if (arrivals == null) {
      throw new IllegalArgumentException(
          "--arrivals DIR is required: an empty directory that" + " every rank sees");
    }
    System.exit(new MpiConformanceMain().runAll(seed, arrivals) ? 0 : 1);
  }

  private boolean runAll(long seed, Path arrivalsDirectory) {
    CollectiveChecks.Arrivals arrivals = CollectiveChecks.inDirectory(arrivalsDirectory);
    try (Collective c = join(launcherSpec())) {
      rank = c.rank();
      size = c.size();
      for (CollectiveChecks.Check check : CollectiveChecks.Check.values()) {
        if (!check.breaksGroup()) {
          check(check.name(), () -> CollectiveChecks.run(check, c, seed, arrivals));
        }
      }
    }
    for (CollectiveChecks.Check check : CollectiveChecks.Check.values()) {
      if (check.breaksGroup() && size >= check.minRanks()) {
        check(
            check.name(),
            () -> {
              try (Collective fresh = join(launcherSpec())) {
                CollectiveChecks.run(check, fresh, seed, arrivals);
              }
            });
      }
    }
    check(
        "JOIN_SPEC_WORLD_SIZE_CONTRADICTS_MPIRUN",
        () ->
            expectRefusedJoin(
                new CollectiveSpec(GROUP, OptionalInt.of(size + 1), OptionalInt.empty(), WATCHDOG),
                "worldSize=" + (size + 1)));
    if (size > 1) {
      // Only rank 0 is wrong; the others must fail the join too, not wait for it.
      CollectiveSpec spec =
          rank == 0
              ? new CollectiveSpec(GROUP, OptionalInt.empty(), OptionalInt.of(1), WATCHDOG)
              : launcherSpec();
      check(
          "JOIN_SPEC_RANK_ON_ONE_RANK_FAILS_EVERY_RANK",
          () ->
              expectRefusedJoin(
                  spec,
                  rank == 0 ? "rank=1 but MPI made this process rank 0" : "another rank's spec"));
    }
    check(
        "JOIN_OTHER_GROUP_REFUSED",
        () ->
            expectRefusedJoin(
                new CollectiveSpec(
                    "another-group", OptionalInt.empty(), OptionalInt.empty(), WATCHDOG),
                "one group per process"));
    check(
        "JOIN_AGAIN_AFTER_FAILURES",
        () -> {
          try (Collective c = join(CollectiveSpec.of(GROUP, size, rank, WATCHDOG))) {
            long[] sum = c.allReduce(ReduceOp.SUM, new long[] {c.rank() + 1L}, "rejoin");
            require(sum[0] == (long) size * (size + 1) / 2, "SUM of 1.." + size + " was " + sum[0]);
            c.barrier("rejoin-end");
          }
        });
    System.out.println(
        prefix()
            + "DONE passed="
            + passed
            + " failed="
            + failures.size()
            + (failures.isEmpty() ? "" : " " + failures));
    System.out.flush();
    return failures.isEmpty();
  }

  private Collective join(CollectiveSpec spec) {
    return provider.join(spec, BackendContext.defaults());
  }

  private static CollectiveSpec launcherSpec() {
    return new CollectiveSpec(GROUP, OptionalInt.empty(), OptionalInt.empty(), WATCHDOG);
  }

  private void expectRefusedJoin(CollectiveSpec spec, String expected) {
    try {
      Collective c = join(spec);
      c.close();
    } catch (IllegalArgumentException e) {
      require(
          e.getMessage().contains(expected),
          "the refusal '" + e.getMessage() + "' does not mention '" + expected + "'");
      return;
    }
    throw new AssertionError("the join with " + spec + " was accepted");
  }

  private static void require(boolean condition, String message) {
    if (!condition) {
      throw new AssertionError(message);
    }
  }

  private void check(String name, Runnable body) {
    try {
      body.run();
      passed++;
      System.out.println(prefix() + "check=" + name + " PASS");
    } catch (Throwable t) {
      failures.add(name);
      String why = String.valueOf(t).replace('\n', ' ');
      System.out.println(prefix() + "check=" + name + " FAIL: " + why);
    }
    System.out.flush();
  }

  private String prefix() {
    return "mpi-conformance rank=" + rank + " size=" + size + " ";
  }
}
