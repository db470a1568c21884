package io.kvtier.collective.mpi;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.OptionalInt;

/**
 * A job whose last rank stops calling: after two agreed calls, the last rank sleeps while the
 * others enter a barrier, so the watchdog of a waiting rank must end the job (rather than let it
 * hang) and name the call. Used by {@link MpiWatchdogAbortTest}.
 */
public final class MpiStuckRankMain {

  private MpiStuckRankMain() {}

  /**
   * Runs one rank.
   *
   * @param args {@code --watchdog-ms N}
   * @throws InterruptedException never in practice: the stuck rank is ended by the job's abort
   */
  public static void main(String[] args) throws InterruptedException {
    long watchdogMillis = args.length == 2 ? Long.parseLong(args[1]) : 2000;
    CollectiveSpec spec =
        new CollectiveSpec(
            "stuck-rank",
            OptionalInt.empty(),
            OptionalInt.empty(),
            Duration.ofMillis(watchdogMillis));
    Collective c = new MpiCollectiveProvider().join(spec, BackendContext.defaults());
    c.barrier("warm-up");
    c.allReduce(ReduceOp.MIN, new long[] {c.rank()}, "before-the-stall");
    if (c.rank() == c.size() - 1) {
      System.out.println("stuck-rank: rank " + c.rank() + " stops calling");
      System.out.flush();
      Thread.sleep(Duration.ofMinutes(5));
    } else {
      c.barrier("waiting-for-the-last-rank");
    }
    System.out.println(
        "stuck-rank: rank " + c.rank() + " passed the barrier: the watchdog" + " did not fire");
  }
}
