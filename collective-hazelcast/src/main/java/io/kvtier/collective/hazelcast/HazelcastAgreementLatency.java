package io.kvtier.collective.hazelcast;

import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.IAtomicLong;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Java side of {@code collective-hazelcast/bench.sh}: the latency of one agreement round of
 * the {@code hazelcast} collective against a bare CP operation, in the same run.
 *
 * <p>Starts 3 embedded members on loopback in this JVM (the production member settings of {@link
 * HazelcastSetup}, a random port range and cluster name), joins one rank per member (3 rank
 * threads), warms up, then runs blocks. Each block runs, one after the other, so that every mode
 * meets the same load on a shared machine:
 *
 * <ul>
 *   <li>{@code allreduce}: the ranks call {@code allReduce(MIN, long[1])} back to back; each
 *       round's latency as rank 0 sees it (call to return);
 *   <li>{@code cp-increment}: the member of rank 0 calls {@code IAtomicLong.incrementAndGet} on
 *       an atomic long of the default CP group (the group the collective's objects live in): one
 *       Raft commit, what a round cannot beat. It is faster when that member happens to lead
 *       the CP group (chosen at random per run), so {@code cp-increment-m1} and {@code -m2}
 *       measure the same from the other members, and {@code cp-increment-all} pools the three;
 *   <li>{@code cp-get}: the member of rank 0 calls {@code IAtomicLong.get} (a linearizable CP
 *       query);
 *   <li>{@code broadcast}: rank 0 broadcasts a payload (32 KiB) to the others; rank 0's latency.
 * </ul>
 *
 * <p>Prints one line per mode with p50, p90, p99 and max in milliseconds, then the ratios of the
 * round to the bare increment of rank 0's member and to the pooled one. Options: {@code --blocks 10 --per-block 200 --warmup 500
 * --payload 32768}.
 */
final class HazelcastAgreementLatency {

  // Held so that the level sticks: java.util.logging keeps loggers weakly.
  private static final Logger HAZELCAST_LOG = Logger.getLogger("com.hazelcast");
  private static final int RANKS = 3;

  private HazelcastAgreementLatency() {}

  /**
   * Runs the benchmark.
   *
   * @param args {@code --blocks N --per-block N --warmup N --payload BYTES}
   * @throws Exception if the cluster or a round fails
   */
  public static void main(String[] args) throws Exception {
    int blocks = 10;
    int perBlock = 200;
    int warmup = 500;
    int payloadBytes = 32 * 1024;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("option " + args[i] + " needs a value");
      }
      int value = Integer.parseInt(args[i + 1]);
      switch (args[i]) {
        case "--blocks" -> blocks = value;
        case "--per-block" -> perBlock = value;
        case "--warmup" -> warmup = value;
        case "--payload" -> payloadBytes = value;
        default ->
            throw new IllegalArgumentException(
                "unknown option " + args[i] + ": use --blocks, --per-block, --warmup, --payload");
      }
    }
    HAZELCAST_LOG.setLevel(Level.parse(System.getProperty("kvtier.hazelcast.log", "WARNING")));

    int base = 30_000 + 10 * ThreadLocalRandom.current().nextInt(1_000);
    HazelcastConfig config =
        HazelcastConfig.DEFAULTS
            .with(
                HazelcastConfig.CLUSTER_NAME,
                "kvtier-bench-" + Long.toHexString(ThreadLocalRandom.current().nextLong()))
            .with(HazelcastConfig.PORT, Integer.toString(base))
            .with(HazelcastConfig.PORT_COUNT, Integer.toString(RANKS + 3))
            .with(HazelcastConfig.PARTITION_COUNT, "31");
    ExecutorService threads =
        Executors.newFixedThreadPool(
            RANKS, task -> Thread.ofPlatform().daemon().name("bench-rank").unstarted(task));
    List<HazelcastInstance> members = new ArrayList<>();
    List<Collective> ranks = new ArrayList<>();
    try {
      List<Future<HazelcastInstance>> starting = new ArrayList<>();
      for (int m = 0; m < RANKS; m++) {
        String name = config.clusterName() + "-member-" + m;
        starting.add(
            threads.submit(
                () -> Hazelcast.newHazelcastInstance(HazelcastSetup.member(config, name))));
      }
      for (Future<HazelcastInstance> f : starting) {
        members.add(f.get());
      }
      for (HazelcastInstance member : members) {
        HazelcastInstances.awaitCp(member, config);
      }
      List<Future<Collective>> joining = new ArrayList<>();
      for (int r = 0; r < RANKS; r++) {
        CollectiveSpec spec = CollectiveSpec.of("bench", RANKS, r, Duration.ofSeconds(30));
        HazelcastInstance member = members.get(r);
        joining.add(threads.submit(() -> HazelcastCollectives.join(member, spec)));
      }
      for (Future<Collective> f : joining) {
        ranks.add(f.get());
      }
      IAtomicLong[] counters = new IAtomicLong[RANKS];
      for (int m = 0; m < RANKS; m++) {
        counters[m] = members.get(m).getCPSubsystem().getAtomicLong("kvtier.bench.bare");
      }
      IAtomicLong counter = counters[0];
      byte[] payload = new byte[payloadBytes];
      ThreadLocalRandom.current().nextBytes(payload);

      // warmup: every mode, so that the JIT and Hazelcast's pools see all of them
      allReduces(threads, ranks, warmup);
      broadcasts(threads, ranks, payload, warmup / 5);
      cpOps(counter, warmup, true);
      cpOps(counter, warmup, false);

      int n = blocks * perBlock;
      long[] allReduce = new long[n];
      long[] increment = new long[n];
      long[][] otherIncrements = new long[RANKS][n];
      long[] get = new long[n];
      long[] broadcast = new long[n];
      for (int b = 0; b < blocks; b++) {
        System.arraycopy(
            allReduces(threads, ranks, perBlock), 0, allReduce, b * perBlock, perBlock);
        System.arraycopy(cpOps(counter, perBlock, true), 0, increment, b * perBlock, perBlock);
        for (int m = 1; m < RANKS; m++) {
          System.arraycopy(
              cpOps(counters[m], perBlock, true), 0, otherIncrements[m], b * perBlock, perBlock);
        }
        System.arraycopy(cpOps(counter, perBlock, false), 0, get, b * perBlock, perBlock);
        System.arraycopy(
            broadcasts(threads, ranks, payload, perBlock), 0, broadcast, b * perBlock, perBlock);
      }
      System.out.printf(
          Locale.ROOT,
          "# %d ranks on %d embedded members (loopback), %d blocks"
              + " of %d calls per mode, warmup %d; milliseconds%n",
          RANKS,
          members.size(),
          blocks,
          perBlock,
          warmup);
      System.out.printf(
          Locale.ROOT, "%-22s %8s %8s %8s %8s %8s%n", "mode", "n", "p50", "p90", "p99", "max");
      print("allreduce-min-1", allReduce);
      print("cp-increment", increment);
      long[] pooled = increment;
      for (int m = 1; m < RANKS; m++) {
        print("cp-increment-m" + m, otherIncrements[m]);
        pooled = concat(pooled, otherIncrements[m]);
      }
      print("cp-increment-all", pooled);
      print("cp-get", get);
      print("broadcast-" + payloadBytes, broadcast);
      System.out.printf(
          Locale.ROOT,
          "ratio allreduce/cp-increment p50=%.2f p99=%.2f%n",
          percentile(allReduce, 50) / percentile(increment, 50),
          percentile(allReduce, 99) / percentile(increment, 99));
      System.out.printf(
          Locale.ROOT,
          "ratio allreduce/cp-increment-all p50=%.2f p99=%.2f%n",
          percentile(allReduce, 50) / percentile(pooled, 50),
          percentile(allReduce, 99) / percentile(pooled, 99));
    } finally {
      for (Collective rank : ranks) {
        try {
          rank.close();
        } catch (RuntimeException e) {
          // the members go next anyway
        }
      }
      for (HazelcastInstance member : members) {
        member.getLifecycleService().terminate();
      }
      threads.shutdownNow();
    }
  }

  /** Every rank calls {@code allReduce(MIN, long[1])} {@code n} times; rank 0's latencies. */
  private static long[] allReduces(ExecutorService threads, List<Collective> ranks, int n)
      throws InterruptedException, ExecutionException {
    return onEveryRank(
        threads,
        ranks,
        rank -> {
          long[] nanos = new long[n];
          long[] value = {rank.rank() + 1};
          for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            long[] min = rank.allReduce(ReduceOp.MIN, value, "bench");
            nanos[i] = System.nanoTime() - t0;
            if (min[0] != 1) {
              throw new IllegalStateException("MIN of 1, 2, 3 gave " + min[0]);
            }
          }
          return nanos;
        });
  }

  /** Rank 0 broadcasts {@code payload} {@code n} times; rank 0's latencies. */
  private static long[] broadcasts(
      ExecutorService threads, List<Collective> ranks, byte[] payload, int n)
      throws InterruptedException, ExecutionException {
    return onEveryRank(
        threads,
        ranks,
        rank -> {
          long[] nanos = new long[n];
          for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            byte[] got = rank.broadcast(0, rank.rank() == 0 ? payload : null, "bench-broadcast");
            nanos[i] = System.nanoTime() - t0;
            if (got.length != payload.length) {
              throw new IllegalStateException("broadcast gave " + got.length + " bytes");
            }
          }
          return nanos;
        });
  }

  private interface RankLoop {
    long[] run(Collective rank);
  }

  private static long[] onEveryRank(ExecutorService threads, List<Collective> ranks, RankLoop loop)
      throws InterruptedException, ExecutionException {
    List<Future<long[]>> running = new ArrayList<>();
    for (Collective rank : ranks) {
      Callable<long[]> task = () -> loop.run(rank);
      running.add(threads.submit(task));
    }
    long[] rank0 = null;
    for (Future<long[]> f : running) {
      long[] nanos = f.get();
      rank0 = rank0 == null ? nanos : rank0;
    }
    return rank0;
  }

  /** {@code n} bare CP calls from one member: increments, or linearizable reads. */
  private static long[] cpOps(IAtomicLong counter, int n, boolean increment) {
    long[] nanos = new long[n];
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      if (increment) {
        counter.incrementAndGet();
      } else {
        counter.get();
      }
      nanos[i] = System.nanoTime() - t0;
    }
    return nanos;
  }

  private static long[] concat(long[] a, long[] b) {
    long[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static void print(String mode, long[] nanos) {
    System.out.printf(
        Locale.ROOT,
        "%-22s %8d %8.3f %8.3f %8.3f %8.3f%n",
        mode,
        nanos.length,
        percentile(nanos, 50),
        percentile(nanos, 90),
        percentile(nanos, 99),
        percentile(nanos, 100));
  }

  /** The nearest-rank percentile, in milliseconds. */
  private static double percentile(long[] nanos, double p) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
  }
}
