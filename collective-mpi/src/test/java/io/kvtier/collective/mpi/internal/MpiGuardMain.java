package io.kvtier.collective.mpi.internal;

import io.kvtier.collective.mpi.MpiConfig;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.Random;
import java.util.function.Consumer;

/**
 * The guard frame under {@code mpirun}, one rank per process: calls whose frames the capacity
 * predictor sizes right, too small and too large must return the right values, and mismatched
 * calls must fail every rank with {@link CollectiveDesyncException}, also where the mismatched
 * calls ride in frames of a learnt capacity (different tags, sequence numbers, ops, lengths within
 * and beyond the cap, SUM against MIN, SUM of different lengths, broadcast against all-reduce).
 * Each desync check runs on a fresh join, since a desync breaks the group. Prints one line per
 * check, {@code mpi-guard rank=R size=N check=NAME PASS} (or {@code FAIL: why}), then {@code
 * DONE}, and exits 0 iff every check passed.
 *
 * <pre>{@code
 * mpirun -np 4 java ... -m io.kvtier.collective.mpi/io.kvtier.collective.mpi.internal.MpiGuardMain \
 *   --seed 42
 * }</pre>
 */
public final class MpiGuardMain {

  /** The checks, in the order they run; the JUnit side expects each on every rank. */
  public static final List<String> CHECKS =
      List.of(
          "MIXED_LENGTHS_DEFAULT_CAP",
          "MIXED_LENGTHS_CAP_16",
          "DESYNC_TAG",
          "DESYNC_SEQUENCE",
          "DESYNC_MIN_MAX",
          "DESYNC_LENGTH_IN_LEARNT_FRAME",
          "DESYNC_LENGTH_BEYOND_CAP",
          "DESYNC_SUM_MIN",
          "DESYNC_SUM_LENGTH",
          "DESYNC_BROADCAST_ALL_REDUCE");

  private static final String GROUP = "mpi-guard";
  private static final Duration WATCHDOG = Duration.ofSeconds(60);
  private static final int[] LENGTHS = {0, 1, 2, 5, 16, 17, 64, 128, 129, 300};

  private final List<String> failures = new ArrayList<>();
  private int rank = -1;
  private int size = -1;

  private MpiGuardMain() {}

  /**
   * Runs the checks as this process's rank.
   *
   * @param args {@code --seed N}
   */
  public static void main(String[] args) {
    if (args.length != 2 || !args[0].equals("--seed")) {
      throw new IllegalArgumentException("usage: --seed N (the same on every rank)");
    }
    System.exit(new MpiGuardMain().runAll(Long.parseLong(args[1])) ? 0 : 1);
  }

  private boolean runAll(long seed) {
    check("MIXED_LENGTHS_DEFAULT_CAP", MpiConfig.defaults(), c -> mixed(c, seed));
    check("MIXED_LENGTHS_CAP_16", new MpiConfig(16), c -> mixed(c, seed + 1));
    desync(
        "DESYNC_TAG",
        c -> {
          warm(c, ReduceOp.MIN, 1, "warm");
          c.allReduce(
              ReduceOp.MIN, new long[] {c.rank()}, c.rank() == 0 ? "guard-left" : "guard-right");
        },
        "guard-left",
        "guard-right");
    desync(
        "DESYNC_SEQUENCE",
        c -> {
          warm(c, ReduceOp.MIN, 1, "same");
          if (c.rank() == 0) {
            c.skipSequenceForTests(1);
          }
          c.allReduce(ReduceOp.MIN, new long[] {rank}, "same");
        },
        "seq 3",
        "seq 4");
    desync(
        "DESYNC_MIN_MAX",
        c -> {
          warm(c, ReduceOp.MIN, 4, "minmax");
          c.allReduce(c.rank() == 0 ? ReduceOp.MAX : ReduceOp.MIN, new long[4], "minmax");
        },
        "allReduce(MIN, length=4)",
        "allReduce(MAX, length=4)");
    desync(
        "DESYNC_LENGTH_IN_LEARNT_FRAME",
        c -> {
          // After this the frame has 64 slots, so lengths 1 and 64 both ride in the same frame.
          warm(c, ReduceOp.MIN, 64, "hot");
          c.allReduce(ReduceOp.MIN, new long[c.rank() == 0 ? 1 : 64], "hot");
        },
        "length=1)",
        "length=64)");
    desync(
        "DESYNC_LENGTH_BEYOND_CAP",
        c -> {
          warm(c, ReduceOp.MAX, 64, "hot");
          c.allReduce(ReduceOp.MAX, new long[c.rank() == 0 ? 200 : 64], "hot");
        },
        "length=200)",
        "length=64)");
    desync(
        "DESYNC_SUM_MIN",
        c -> {
          warm(c, ReduceOp.MIN, 8, "sum-min");
          c.allReduce(c.rank() == 0 ? ReduceOp.SUM : ReduceOp.MIN, new long[8], "sum-min");
        },
        "allReduce(SUM, length=8)",
        "allReduce(MIN, length=8)");
    desync(
        "DESYNC_SUM_LENGTH",
        c -> {
          warm(c, ReduceOp.SUM, 64, "sums");
          c.allReduce(ReduceOp.SUM, new long[c.rank() == 0 ? 1 : 64], "sums");
        },
        "allReduce(SUM, length=1)",
        "allReduce(SUM, length=64)");
    desync(
        "DESYNC_BROADCAST_ALL_REDUCE",
        c -> {
          warm(c, ReduceOp.MIN, 64, "mixed-op");
          if (c.rank() == 0) {
            c.broadcast(0, new byte[] {1, 2, 3}, "mixed-op");
          } else {
            c.allReduce(ReduceOp.MIN, new long[64], "mixed-op");
          }
        },
        "broadcast(root=0)",
        "allReduce(MIN, length=64)");
    System.out.println(
        prefix() + "DONE failed=" + failures.size() + (failures.isEmpty() ? "" : " " + failures));
    System.out.flush();
    return failures.isEmpty();
  }

  /** Three agreed calls, so that the frame of the next call after this one is learnt. */
  private static void warm(MpiCollective c, ReduceOp op, int length, String tag) {
    for (int i = 0; i < 3; i++) {
      c.allReduce(op, new long[length], tag);
    }
  }

  /**
   * A seeded script, the same on every rank, of all-reduces of every op over lengths that change
   * per call site (frames predicted right, too small and too large), with broadcasts and
   * barriers between; every result against the reduction of what each rank contributed.
   */
  private void mixed(MpiCollective c, long seed) {
    Random script = new Random(seed);
    int[] siteLengths = new int[6];
    for (int step = 0; step < 600; step++) {
      int site = script.nextInt(siteLengths.length);
      if (script.nextInt(4) == 0 || step < siteLengths.length) {
        siteLengths[site] = LENGTHS[script.nextInt(LENGTHS.length)];
      }
      int kind = script.nextInt(10);
      String tag = "site-" + site;
      if (kind == 0) {
        c.barrier(tag);
      } else if (kind == 1) {
        int root = script.nextInt(size);
        byte[] sent = new byte[siteLengths[site]];
        Arrays.fill(sent, (byte) (step + root));
        byte[] got = c.broadcast(root, rank == root ? sent : null, tag);
        require(Arrays.equals(got, sent), "step " + step + ": broadcast from " + root);
      } else {
        ReduceOp op = ReduceOp.values()[script.nextInt(3)];
        int length = siteLengths[site];
        long[] got = c.allReduce(op, contribution(rank, step, length), tag);
        long[] expected = contribution(0, step, length);
        for (int r = 1; r < size; r++) {
          long[] other = contribution(r, step, length);
          for (int i = 0; i < length; i++) {
            expected[i] =
                switch (op) {
                  case MIN -> Math.min(expected[i], other[i]);
                  case MAX -> Math.max(expected[i], other[i]);
                  case SUM -> expected[i] + other[i];
                };
          }
        }
        require(
            Arrays.equals(got, expected),
            "step "
                + step
                + ": "
                + op
                + " of "
                + length
                + " values on "
                + tag
                + " gave "
                + Arrays.toString(got)
                + ", expected "
                + Arrays.toString(expected));
      }
    }
  }

  /** What a rank contributes: spread over the whole long range, extremes included. */
  private static long[] contribution(int rank, int step, int length) {
    long[] values = new long[length];
    Random random = new Random(step * 1_000_003L + rank);
    for (int i = 0; i < length; i++) {
      int pick = random.nextInt(8);
      values[i] = pick == 0 ? Long.MIN_VALUE : pick == 1 ? Long.MAX_VALUE : random.nextLong();
    }
    return values;
  }

  private void desync(String name, Consumer<MpiCollective> mismatched, String... mentioned) {
    check(
        name,
        MpiConfig.defaults(),
        c -> {
          CollectiveException failure = null;
          try {
            mismatched.accept(c);
          } catch (CollectiveException e) {
            failure = e;
          }
          require(
              failure instanceof CollectiveDesyncException,
              "the mismatched call threw " + failure + ", not a CollectiveDesyncException");
          for (String text : mentioned) {
            require(
                failure.getMessage().contains(text),
                "the desync message does not mention '" + text + "': " + failure.getMessage());
          }
          CollectiveException later = null;
          try {
            c.barrier("after-desync");
          } catch (CollectiveException e) {
            later = e;
          }
          require(later != null, "a call after the desync did not throw");
        });
  }

  private void check(String name, MpiConfig config, Consumer<MpiCollective> body) {
    try (MpiCollective c =
        MpiRuntime.join(
            new CollectiveSpec(GROUP, OptionalInt.empty(), OptionalInt.empty(), WATCHDOG),
            config,
            null)) {
      rank = c.rank();
      size = c.size();
      body.accept(c);
      System.out.println(prefix() + "check=" + name + " PASS");
    } catch (Throwable t) {
      failures.add(name);
      System.out.println(
          prefix() + "check=" + name + " FAIL: " + String.valueOf(t).replace('\n', ' '));
    }
    System.out.flush();
  }

  private static void require(boolean condition, String message) {
    if (!condition) {
      throw new AssertionError(message);
    }
  }

  private String prefix() {
    return "mpi-guard rank=" + rank + " size=" + size + " ";
  }
}
