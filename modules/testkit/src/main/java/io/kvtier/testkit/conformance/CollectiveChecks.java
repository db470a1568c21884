package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.ReduceOp;
import io.kvtier.testkit.TestSeeds;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * The checks of {@link CollectiveConformanceSuite} as plain code that one rank runs, for providers
 * whose ranks cannot be threads of one JVM (MPI runs one rank per process under {@code mpirun}).
 * Every rank runs the same check with the same seed and its own joined handle; the inputs of all
 * ranks derive from the seed, so each rank computes every expected result without communicating.
 * A check makes all its collective calls before it verifies anything, so a wrong value on one rank
 * fails that rank's check without leaving the other ranks waiting. Failures are {@link
 * AssertionError}s naming the rank, the step and the values.
 *
 * <p>The call script of {@link Check#MIXED_SEQUENCE} is {@link CollectiveScript}, shared
 * with the thread-based suite.
 */
public final class CollectiveChecks {

  private CollectiveChecks() {}

  /**
   * The tag of the odd rank's barrier in the {@code DESYNC_ODD_*} checks: 600 characters of the
   * base64url alphabet in brackets, as long as and in the alphabet of the tags by which a failed
   * engine rank tells the others its failure.
   */
  public static final String ODD_TAG = oddTag();

  private static String oddTag() {
    String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    StringBuilder tag = new StringBuilder("conformance-odd[");
    for (int i = 0; i < 600; i++) {
      tag.append(alphabet.charAt((i * 7 + i / 64) % alphabet.length()));
    }
    return tag.append(']').toString();
  }

  /** One check; the {@code DESYNC_*} checks break the group, so run each on a fresh one. */
  public enum Check {
    /** MIN, MAX and SUM of seeded arrays (1, 2-4, 5-16 and 17-100 values) match a local fold. */
    ALL_REDUCE,
    /**
     * {@code allReduceInto}: the same reductions into a separate array and in place, and a result
     * of another length refused on every rank without breaking the group.
     */
    ALL_REDUCE_INTO,
    /** Broadcast from every root of empty, small and 64 KiB payloads. */
    BROADCAST,
    /** No rank leaves a barrier before every rank arrived, 20 rounds. */
    BARRIER,
    /** A seeded script of 40 all-reduces, broadcasts and barriers with varying tags. */
    MIXED_SEQUENCE,
    /** Rank 0 calls a barrier with another tag than the others. */
    DESYNC_TAG,
    /** Rank 0 calls an all-reduce where the others call a barrier, same tag. */
    DESYNC_OPERATION,
    /** Rank 0 reduces 1 value where the others reduce 2. */
    DESYNC_ARRAY_LENGTH,
    /** Rank 0 reduces 1 value where the others reduce 100 (a short and a long payload). */
    DESYNC_LONG_ARRAY_LENGTH,
    /** Rank 0 reduces with MIN where the others reduce with SUM. */
    DESYNC_REDUCE_OP,
    /** Rank 0 broadcasts from root 0 where the others broadcast from root 1. */
    DESYNC_ROOT,
    /**
     * The last rank calls, late, a barrier with a long tag of its own ({@link #ODD_TAG}) where
     * the others broadcast from root 0: every rank's desync names that tag. This is how a rank
     * whose step failed tells the others (core's {@code RankGroupFailedException}).
     */
    DESYNC_ODD_BARRIER_AMONG_BROADCASTS,
    /** As {@link #DESYNC_ODD_BARRIER_AMONG_BROADCASTS}, where the others all-reduce 5 values. */
    DESYNC_ODD_BARRIER_AMONG_REDUCTIONS;

    /**
     * Whether the check leaves the group broken (every later call throws).
     *
     * @return true for the desync checks
     */
    public boolean breaksGroup() {
      return name().startsWith("DESYNC_");
    }

    /**
     * The fewest ranks the check needs.
     *
     * @return 2 for the desync checks, else 1
     */
    public int minRanks() {
      return breaksGroup() ? 2 : 1;
    }
  }

  /** Where ranks record barrier arrivals so that each can count them after the barrier. */
  public interface Arrivals {
    /**
     * Records that a rank arrived at a round's barrier.
     *
     * @param round the round
     * @param rank the rank
     */
    void arrive(int round, int rank);

    /**
     * Counts the arrivals of a round so far.
     *
     * @param round the round
     * @return the number of ranks that arrived
     */
    int count(int round);
  }

  /**
   * Arrivals of ranks that are threads of this JVM.
   *
   * @return a fresh, thread-safe record
   */
  public static Arrivals inMemory() {
    ConcurrentHashMap<Integer, AtomicInteger> rounds = new ConcurrentHashMap<>();
    return new Arrivals() {
      @Override
      public void arrive(int round, int rank) {
        rounds.computeIfAbsent(round, r -> new AtomicInteger()).incrementAndGet();
      }

      @Override
      public int count(int round) {
        AtomicInteger n = rounds.get(round);
        return n == null ? 0 : n.get();
      }
    };
  }

  /**
   * Arrivals of ranks that are processes on one machine: one empty file per rank and round.
   *
   * @param directory an empty directory that every rank sees, fresh for each run
   * @return the record
   */
  public static Arrivals inDirectory(Path directory) {
    Objects.requireNonNull(directory, "directory");
    return new Arrivals() {
      @Override
      public void arrive(int round, int rank) {
        try {
          Files.createFile(directory.resolve("round-" + round + "-rank-" + rank));
        } catch (FileAlreadyExistsException e) {
          throw new AssertionError(
              "rank "
                  + rank
                  + " arrived twice at round "
                  + round
                  + ", or "
                  + directory
                  + " is not fresh",
              e);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }

      @Override
      public int count(int round) {
        String prefix = "round-" + round + "-rank-";
        try (Stream<Path> files = Files.list(directory)) {
          return (int) files.filter(f -> f.getFileName().toString().startsWith(prefix)).count();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    };
  }

  /**
   * Runs one check as the rank of {@code collective}.
   *
   * @param check the check
   * @param collective this rank's handle, joined for this check if it breaks the group
   * @param seed the seed every rank passes
   * @param arrivals where barrier arrivals are recorded, shared by the ranks
   * @throws AssertionError if the provider misbehaves
   */
  public static void run(Check check, Collective collective, long seed, Arrivals arrivals) {
    Objects.requireNonNull(check, "check");
    Objects.requireNonNull(collective, "collective");
    Objects.requireNonNull(arrivals, "arrivals");
    Random random = new Random(TestSeeds.mix(seed, check.name()));
    switch (check) {
      case ALL_REDUCE -> allReduce(collective, random);
      case ALL_REDUCE_INTO -> allReduceInto(collective, random);
      case BROADCAST -> broadcast(collective, random);
      case BARRIER -> barrier(collective, arrivals);
      case MIXED_SEQUENCE -> {
        int rank = collective.rank();
        List<CollectiveScript.Step> script = CollectiveScript.random(collective.size(), 40, random);
        CollectiveScript.verify(script, CollectiveScript.play(script, collective, rank), rank);
      }
      default -> desync(check, collective);
    }
  }

  private static void allReduce(Collective c, Random random) {
    int size = c.size();
    int rank = c.rank();
    int rounds = 12;
    ReduceOp[] ops = new ReduceOp[rounds];
    long[][] mine = new long[rounds][];
    long[][] expected = new long[rounds][];
    for (int round = 0; round < rounds; round++) {
      // Every operation with every class of length: one value, a few, a dozen, up to 100
      // (providers switch protocols by length: MPI's inline frame holds a few values).
      ops[round] = ReduceOp.values()[round % ReduceOp.values().length];
      int length =
          switch (round / ReduceOp.values().length) {
            case 0 -> 1;
            case 1 -> 2 + random.nextInt(3);
            case 2 -> 5 + random.nextInt(12);
            default -> 17 + random.nextInt(84);
          };
      for (int r = 0; r < size; r++) {
        long[] input = randomValues(length, random);
        if (r == rank) {
          mine[round] = input;
        }
        expected[round] = r == 0 ? input.clone() : fold(ops[round], expected[round], input);
      }
    }
    List<long[]> results = new ArrayList<>();
    List<long[]> passed = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      long[] argument = mine[round].clone();
      passed.add(argument);
      results.add(c.allReduce(ops[round], argument, "conformance-reduce"));
    }
    for (int round = 0; round < rounds; round++) {
      assertThat(results.get(round))
          .as("rank %d round %d: allReduce returns a new array", rank, round)
          .isNotSameAs(passed.get(round));
      assertThat(passed.get(round))
          .as("rank %d round %d: allReduce leaves its input alone", rank, round)
          .isEqualTo(mine[round]);
      assertThat(results.get(round))
          .as(
              "rank %d round %d: %s of %d values on %d ranks",
              rank, round, ops[round], mine[round].length, size)
          .isEqualTo(expected[round]);
    }
  }

  private static void allReduceInto(Collective c, Random random) {
    int size = c.size();
    int rank = c.rank();
    int rounds = 12;
    ReduceOp[] ops = new ReduceOp[rounds];
    long[][] mine = new long[rounds][];
    long[][] expected = new long[rounds][];
    for (int round = 0; round < rounds; round++) {
      ops[round] = ReduceOp.values()[round % ReduceOp.values().length];
      int length =
          switch (round / ReduceOp.values().length) {
            case 0 -> 1;
            case 1 -> 2 + random.nextInt(3);
            case 2 -> 5 + random.nextInt(60);
            default -> 65 + random.nextInt(200);
          };
      for (int r = 0; r < size; r++) {
        long[] input = randomValues(length, random);
        if (r == rank) {
          mine[round] = input;
        }
        expected[round] = r == 0 ? input.clone() : fold(ops[round], expected[round], input);
      }
    }
    long[][] passed = new long[rounds][];
    long[][] results = new long[rounds][];
    for (int round = 0; round < rounds; round++) {
      // Odd rounds reduce in place; even ones into an array whose old contents must not leak.
      passed[round] = mine[round].clone();
      results[round] = round % 2 == 1 ? passed[round] : randomValues(mine[round].length, random);
      c.allReduceInto(ops[round], passed[round], results[round], "conformance-reduce-into");
    }
    // Every rank passes a result one longer: refused before any communication, on every rank.
    Throwable refused =
        failureOf(
            () ->
                c.allReduceInto(
                    ReduceOp.SUM, new long[2], new long[3], "conformance-reduce-into-length"));
    Throwable after = failureOf(() -> c.barrier("conformance-reduce-into-after"));
    for (int round = 0; round < rounds; round++) {
      if (round % 2 == 0) {
        assertThat(passed[round])
            .as("rank %d round %d: allReduceInto leaves its input alone", rank, round)
            .isEqualTo(mine[round]);
      }
      assertThat(results[round])
          .as(
              "rank %d round %d: %s of %d values on %d ranks%s",
              rank, round, ops[round], mine[round].length, size, round % 2 == 1 ? ", in place" : "")
          .isEqualTo(expected[round]);
    }
    assertThat(refused)
        .as("rank %d: allReduceInto with a result of another length", rank)
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(after).as("rank %d: a barrier after the refused call", rank).isNull();
  }

  private static long[] fold(ReduceOp op, long[] into, long[] values) {
    for (int i = 0; i < into.length; i++) {
      into[i] = op.apply(into[i], values[i]);
    }
    return into;
  }

  /** Mostly small values, with the extremes that catch overflow and sign mistakes. */
  private static long[] randomValues(int length, Random random) {
    long[] v = new long[length];
    for (int i = 0; i < length; i++) {
      v[i] =
          switch (random.nextInt(8)) {
            case 0 -> Long.MAX_VALUE;
            case 1 -> Long.MIN_VALUE;
            case 2 -> random.nextLong();
            default -> random.nextInt(2001) - 1000;
          };
    }
    return v;
  }

  private static void broadcast(Collective c, Random random) {
    int size = c.size();
    int rank = c.rank();
    int[] lengths = {0, 1 + random.nextInt(100), 64 * 1024};
    byte[][][] payloads = new byte[size][lengths.length][];
    for (int root = 0; root < size; root++) {
      for (int k = 0; k < lengths.length; k++) {
        payloads[root][k] = new byte[lengths[k]];
        random.nextBytes(payloads[root][k]);
      }
    }
    List<byte[]> sent = new ArrayList<>();
    List<byte[]> got = new ArrayList<>();
    for (int root = 0; root < size; root++) {
      for (int k = 0; k < lengths.length; k++) {
        byte[] mine = rank == root ? payloads[root][k].clone() : null;
        sent.add(mine);
        got.add(c.broadcast(root, mine, "conformance-bcast"));
      }
    }
    int i = 0;
    for (int root = 0; root < size; root++) {
      for (int k = 0; k < lengths.length; k++, i++) {
        assertThat(got.get(i))
            .as("rank %d: broadcast of %d bytes from root %d", rank, lengths[k], root)
            .isEqualTo(payloads[root][k]);
        if (sent.get(i) != null && lengths[k] > 0) {
          assertThat(got.get(i))
              .as("rank %d: the root gets a copy, not its own array", rank)
              .isNotSameAs(sent.get(i));
        }
      }
    }
  }

  private static void barrier(Collective c, Arrivals arrivals) {
    int rounds = 20;
    int[] seen = new int[rounds];
    for (int round = 0; round < rounds; round++) {
      arrivals.arrive(round, c.rank());
      c.barrier("conformance-barrier");
      seen[round] = arrivals.count(round);
    }
    for (int round = 0; round < rounds; round++) {
      assertThat(seen[round])
          .as("arrivals seen by rank %d leaving barrier %d of %d ranks", c.rank(), round, c.size())
          .isEqualTo(c.size());
    }
  }

  private static void desync(Check check, Collective c) {
    if (check == Check.DESYNC_ODD_BARRIER_AMONG_BROADCASTS
        || check == Check.DESYNC_ODD_BARRIER_AMONG_REDUCTIONS) {
      oddBarrier(check, c);
      return;
    }
    boolean left = c.rank() == 0;
    Throwable first = failureOf(() -> mismatchedCall(check, c, left));
    Throwable later = failureOf(() -> c.barrier("conformance-after-failure"));
    assertThat(first)
        .as("rank %d: the mismatched call (%s)", c.rank(), check)
        .isInstanceOf(CollectiveDesyncException.class);
    if (check == Check.DESYNC_TAG) {
      assertThat(first)
          .as("rank %d: a desync names each rank's tag", c.rank())
          .hasMessageContaining("conformance-left")
          .hasMessageContaining("conformance-right");
    }
    assertThat(later)
        .as("rank %d: a call on the group after a desync", c.rank())
        .isInstanceOf(CollectiveException.class);
  }

  private static void oddBarrier(Check check, Collective c) {
    boolean odd = c.rank() == c.size() - 1;
    Throwable first =
        failureOf(
            () -> {
              if (odd) {
                // Late, as a failed rank is: the others already wait in their call.
                try {
                  Thread.sleep(50);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                c.barrier(ODD_TAG);
              } else if (check == Check.DESYNC_ODD_BARRIER_AMONG_BROADCASTS) {
                c.broadcast(0, new byte[] {1, 2, 3}, "conformance-recv");
              } else {
                c.allReduce(ReduceOp.MIN, new long[5], "conformance-sync");
              }
            });
    Throwable later = failureOf(() -> c.barrier("conformance-after-failure"));
    assertThat(first)
        .as("rank %d: the call that met the odd barrier (%s)", c.rank(), check)
        .isInstanceOf(CollectiveDesyncException.class)
        .hasMessageContaining(ODD_TAG);
    assertThat(later)
        .as("rank %d: a call on the group after a desync", c.rank())
        .isInstanceOf(CollectiveException.class);
  }

  private static void mismatchedCall(Check check, Collective c, boolean left) {
    switch (check) {
      case DESYNC_TAG -> c.barrier(left ? "conformance-left" : "conformance-right");
      case DESYNC_OPERATION -> {
        if (left) {
          c.allReduce(ReduceOp.SUM, new long[] {1}, "conformance-op");
        } else {
          c.barrier("conformance-op");
        }
      }
      case DESYNC_ARRAY_LENGTH -> c.allReduce(ReduceOp.MAX, new long[left ? 1 : 2], "conf-len");
      case DESYNC_LONG_ARRAY_LENGTH ->
          c.allReduce(ReduceOp.MIN, new long[left ? 1 : 100], "conformance-long-len");
      case DESYNC_REDUCE_OP ->
          c.allReduce(left ? ReduceOp.MIN : ReduceOp.SUM, new long[] {3}, "conformance-reduce-op");
      case DESYNC_ROOT -> c.broadcast(left ? 0 : 1, new byte[] {7}, "conformance-root");
      default -> throw new IllegalArgumentException(check + " is not a desync check");
    }
  }

  private static Throwable failureOf(Runnable call) {
    try {
      call.run();
      return null;
    } catch (Throwable t) {
      return t;
    }
  }
}
