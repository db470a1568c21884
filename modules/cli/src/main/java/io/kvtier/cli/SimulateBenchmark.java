package io.kvtier.cli;

import io.kvtier.simulator.MultiRankSimulator;
import io.kvtier.simulator.SimulationConfig;
import io.kvtier.simulator.SimulationResult;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code kvtier simulate --benchmark}: simulated ticks per second and collective calls per tick
 * at 1, 2, 4 and 8 ranks, for one config. Each rank count runs {@value #WARM_UP_RUNS} times to
 * warm the JIT up, then {@code runs} times with seeds {@code seed .. seed + runs - 1}; a figure is
 * the total ticks over the total wall time of the measured runs.
 */
final class SimulateBenchmark {
  static final int[] RANKS = {1, 2, 4, 8};
  static final int WARM_UP_RUNS = 2;

  /** One row of the table. */
  record Row(int ranks, long ticks, double seconds, long calls, long syncTicks, boolean passed) {
    double ticksPerSecond() {
      return seconds > 0 ? ticks / seconds : 0;
    }

    double callsPerTick() {
      return ticks > 0 ? (double) calls / ticks : 0;
    }
  }

  private SimulateBenchmark() {}

  static List<Row> run(SimulationConfig base, int runs) {
    List<Row> rows = new ArrayList<>();
    // The first rank count measured must not pay for the JIT: warm every code path up first.
    for (int i = 0; i < WARM_UP_RUNS; i++) {
      MultiRankSimulator.run(base.toBuilder().ranks(2).seed(base.seed() - 100 - i).build());
    }
    for (int ranks : RANKS) {
      for (int i = 0; i < WARM_UP_RUNS; i++) {
        MultiRankSimulator.run(base.toBuilder().ranks(ranks).seed(base.seed() - 1 - i).build());
      }
      long ticks = 0;
      long calls = 0;
      long syncTicks = 0;
      double seconds = 0;
      boolean passed = true;
      for (int i = 0; i < runs; i++) {
        SimulationResult r =
            MultiRankSimulator.run(base.toBuilder().ranks(ranks).seed(base.seed() + i).build());
        ticks += r.ticks();
        calls += r.collectives().calls();
        syncTicks += r.collectives().syncTicks();
        seconds += r.wallSeconds();
        passed &= r.passed();
      }
      rows.add(new Row(ranks, ticks, seconds, calls, syncTicks, passed));
    }
    return rows;
  }

  static void print(PrintWriter out, SimulationConfig base, int runs, List<Row> rows) {
    out.printf(
        Locale.ROOT,
        "kvtier simulate --benchmark: %d runs per rank count, %s, ack delay"
            + " %s, digest interval %d%n",
        runs,
        base.workload(),
        base.ackDelay().cliName(),
        base.digestInterval());
    out.printf(
        Locale.ROOT,
        "%5s %8s %9s %10s %16s %11s %6s%n",
        "ranks",
        "ticks",
        "wall s",
        "ticks/s",
        "collectives/tick",
        "sync ticks",
        "checks");
    for (Row r : rows) {
      out.printf(
          Locale.ROOT,
          "%5d %8d %9.2f %10.0f %16.2f %10.0f%% %6s%n",
          r.ranks(),
          r.ticks(),
          r.seconds(),
          r.ticksPerSecond(),
          r.callsPerTick(),
          r.ticks() > 0 ? 100.0 * r.syncTicks() / r.ticks() : 0,
          r.passed() ? "pass" : "FAIL");
    }
    out.flush();
  }
}
