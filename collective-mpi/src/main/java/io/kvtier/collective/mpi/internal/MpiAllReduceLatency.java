package io.kvtier.collective.mpi.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvtier.collective.mpi.MpiConfig;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * The Java side of {@code collective-mpi/bench.sh}: per-call latency of {@code allReduce} through
 * the whole {@link Collective} ({@code java-collective}: guard frame, copies, gate, the new result
 * array; {@code java-collective-into}: the same into a reused array), through the bare binding
 * ({@code java-binding}: one {@code MPI_Allreduce} downcall on off-heap buffers), and
 * of the C loop of {@code src/main/c/mpi_allreduce_latency.c} called in these same processes
 * ({@code c-lib}, with {@code --c-library}), and C making the MPI calls the collective makes
 * ({@code c-lib-same}: in the steady state, where the frame's capacity is predicted, the guard
 * frame of {@code 2 + length} longs when a MIN/MAX rides in it, else a frame of {@code 2 + 1}
 * longs, then the array's own {@code MPI_Allreduce}; what the protocol costs before any Java
 * runs). The modes' rounds are interleaved (a barrier, a
 * round of one mode, a barrier, a round of the next, ...), so that on a busy machine every mode
 * meets the same load; rank 0 prints each mode's best and median round.
 *
 * <pre>{@code
 * mpirun -np 2 java --enable-native-access=io.kvtier.collective.mpi -p <jars> \
 *   -m io.kvtier.collective.mpi/io.kvtier.collective.mpi.internal.MpiAllReduceLatency \
 *   --iterations 10000 --warmup 50000 --rounds 15 --lengths 1,64 --op MIN \
 *   --mode c-lib,c-lib-same,collective,collective-into,binding \
 *   --c-library target/bench/libkvtier_mpi_bench.so [--inline-longs 128]
 * }</pre>
 */
public final class MpiAllReduceLatency {

  /** One timed round of a mode. */
  @FunctionalInterface
  private interface Round {
    /** Runs {@code iterations} calls and returns the microseconds per call. */
    double run(long iterations);
  }

  private static long sink;

  private MpiAllReduceLatency() {}

  /**
   * Runs the benchmark as one rank.
   *
   * @param args see the class comment
   */
  public static void main(String[] args) {
    Map<String, String> options = options(args);
    long iterations = Long.parseLong(options.getOrDefault("iterations", "10000"));
    long warmup = Long.parseLong(options.getOrDefault("warmup", "50000"));
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "15"));
    int[] lengths =
        Arrays.stream(options.getOrDefault("lengths", "1,64").split(","))
            .mapToInt(s -> Integer.parseInt(s.strip()))
            .toArray();
    ReduceOp op = ReduceOp.valueOf(options.getOrDefault("op", "MIN"));
    List<String> modes = List.of(options.getOrDefault("mode", "collective,binding").split(","));
    MpiConfig config =
        new MpiConfig(
            Integer.parseInt(
                options.getOrDefault(
                    "inline-longs", Integer.toString(MpiConfig.DEFAULT_INLINE_LONGS))));
    CollectiveSpec spec =
        new CollectiveSpec(
            "bench", OptionalInt.empty(), OptionalInt.empty(), Duration.ofMinutes(5));
    try (Collective collective = MpiRuntime.join(spec, config)) {
      MpiCollective mpi = (MpiCollective) collective;
      SymbolLookup cLibrary =
          modes.stream().anyMatch(m -> m.startsWith("c-lib"))
              ? cLibrary(
                  Path.of(
                      Objects.requireNonNull(
                          options.get("c-library"),
                          "--mode c-lib needs --c-library PATH (bench.sh builds it)")))
              : null;
      MethodHandle cRound =
          cLibrary == null
              ? null
              : downcall(
                  cLibrary,
                  "kvtier_c_allreduce_round",
                  ADDRESS,
                  ADDRESS,
                  JAVA_INT,
                  JAVA_LONG,
                  JAVA_INT);
      MethodHandle cPairRound =
          cLibrary == null
              ? null
              : downcall(
                  cLibrary,
                  "kvtier_c_allreduce_pair_round",
                  ADDRESS,
                  ADDRESS,
                  JAVA_INT,
                  ADDRESS,
                  ADDRESS,
                  JAVA_INT,
                  JAVA_LONG,
                  JAVA_INT);
      for (int length : lengths) {
        List<Round> timed = new ArrayList<>();
        for (String mode : modes) {
          timed.add(
              switch (mode) {
                case "collective" -> collective(mpi, op, length);
                case "collective-into" -> collectiveInto(mpi, op, length);
                case "binding" -> binding(mpi, op, length);
                case "c-lib" -> cLibrary(cRound, mpi.rank(), op, length);
                // The MPI calls the collective makes once the frame's capacity is predicted (the
                // warmup's first calls teach it), from C: what the protocol costs before any Java
                // runs. The frame alone when the array rides in it, else a minimal frame and the
                // array.
                case "c-lib-same" ->
                    op != ReduceOp.SUM && length <= config.inlineLongs()
                        ? cLibrary(
                            cRound,
                            mpi.rank(),
                            ReduceOp.MIN,
                            MpiFrame.HEADER_LONGS + Math.max(1, length))
                        : cPair(cPairRound, mpi.rank(), op, MpiFrame.HEADER_LONGS + 1, length);
                default ->
                    throw new IllegalArgumentException(
                        "--mode "
                            + mode
                            + " is none of c-lib, c-lib-same, collective,"
                            + " collective-into, binding");
              });
        }
        for (Round round : timed) {
          round.run(warmup);
        }
        double[][] perCall = new double[timed.size()][rounds];
        for (int r = 0; r < rounds; r++) {
          for (int m = 0; m < timed.size(); m++) {
            mpi.library().barrier();
            perCall[m][r] = timed.get(m).run(iterations);
          }
        }
        for (int m = 0; m < timed.size() && mpi.rank() == 0; m++) {
          Arrays.sort(perCall[m]);
          String label = modes.get(m).startsWith("c-lib") ? modes.get(m) : "java-" + modes.get(m);
          System.out.printf(
              "%s ranks=%d op=%s length=%d iterations=%d best_us=%.3f"
                  + " median_us=%.3f inline_longs=%d%n",
              label,
              mpi.size(),
              op,
              length,
              iterations,
              perCall[m][0],
              perCall[m][rounds / 2],
              config.inlineLongs());
        }
        System.out.flush();
      }
    }
    if (sink == 42) {
      System.out.println("(sink)");
    }
  }

  private static Round collective(MpiCollective c, ReduceOp op, int length) {
    long[] values = new long[length];
    for (int i = 0; i < length; i++) {
      values[i] = c.rank() * 1000L + i;
    }
    return iterations -> {
      long s = 0;
      long start = System.nanoTime();
      for (long i = 0; i < iterations; i++) {
        s += c.allReduce(op, values, "bench").length;
      }
      double perCall = (System.nanoTime() - start) / 1e3 / iterations;
      sink += s;
      return perCall;
    };
  }

  private static Round collectiveInto(MpiCollective c, ReduceOp op, int length) {
    long[] values = new long[length];
    for (int i = 0; i < length; i++) {
      values[i] = c.rank() * 1000L + i;
    }
    long[] result = new long[length];
    return iterations -> {
      long s = 0;
      long start = System.nanoTime();
      for (long i = 0; i < iterations; i++) {
        c.allReduceInto(op, values, result, "bench");
        s += result.length;
      }
      double perCall = (System.nanoTime() - start) / 1e3 / iterations;
      sink += s;
      return perCall;
    };
  }

  private static Round binding(MpiCollective c, ReduceOp op, int length) {
    MpiLibrary library = c.library();
    MemorySegment in = buffer(c.rank(), length);
    MemorySegment out = Arena.ofAuto().allocate(JAVA_LONG, Math.max(1, length));
    return iterations -> {
      long start = System.nanoTime();
      for (long i = 0; i < iterations; i++) {
        library.allReduce(in, out, length, op);
      }
      return (System.nanoTime() - start) / 1e3 / iterations;
    };
  }

  private static Round cLibrary(MethodHandle cRound, int rank, ReduceOp op, int length) {
    MemorySegment in = buffer(rank, length);
    MemorySegment out = Arena.ofAuto().allocate(JAVA_LONG, Math.max(1, length));
    return iterations -> {
      try {
        return (double) cRound.invokeExact(in, out, length, iterations, op.ordinal());
      } catch (Throwable t) {
        throw new IllegalStateException("kvtier_c_allreduce_round failed: " + t, t);
      }
    };
  }

  private static MemorySegment buffer(int rank, int length) {
    MemorySegment in = Arena.ofAuto().allocate(JAVA_LONG, Math.max(1, length));
    for (int i = 0; i < length; i++) {
      in.setAtIndex(JAVA_LONG, i, rank * 1000L + i);
    }
    return in;
  }

  private static Round cPair(
      MethodHandle cPairRound, int rank, ReduceOp op, int frameLength, int length) {
    MemorySegment frameIn = buffer(rank, frameLength);
    MemorySegment frameOut = Arena.ofAuto().allocate(JAVA_LONG, frameLength);
    MemorySegment in = buffer(rank, length);
    MemorySegment out = Arena.ofAuto().allocate(JAVA_LONG, Math.max(1, length));
    return iterations -> {
      try {
        return (double)
            cPairRound.invokeExact(
                frameIn, frameOut, frameLength, in, out, length, iterations, op.ordinal());
      } catch (Throwable t) {
        throw new IllegalStateException("kvtier_c_allreduce_pair_round failed: " + t, t);
      }
    };
  }

  // The C library links libmpi.so.40 itself; dlopen resolves it to the copy this JVM loaded.
  @SuppressWarnings("restricted")
  private static SymbolLookup cLibrary(Path library) {
    return SymbolLookup.libraryLookup(library, Arena.global());
  }

  @SuppressWarnings("restricted")
  private static MethodHandle downcall(
      SymbolLookup library, String name, MemoryLayout... arguments) {
    MemorySegment symbol =
        library
            .find(name)
            .orElseThrow(
                () ->
                    new IllegalArgumentException(
                        "the C library has no "
                            + name
                            + ": build it with"
                            + " mpicc -shared -fPIC -DKVTIER_BENCH_LIBRARY (bench.sh does)"));
    return Linker.nativeLinker()
        .downcallHandle(symbol, FunctionDescriptor.of(JAVA_DOUBLE, arguments));
  }

  private static Map<String, String> options(String[] args) {
    List<String> known =
        List.of(
            "iterations", "warmup", "rounds", "lengths", "op", "mode", "inline-longs", "c-library");
    Map<String, String> options = new HashMap<>();
    List<String> bad = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String key = args[i].startsWith("--") ? args[i].substring(2) : "";
      if (!known.contains(key) || i + 1 >= args.length) {
        bad.add(args[i]);
        continue;
      }
      options.put(key, args[++i]);
    }
    if (!bad.isEmpty()) {
      throw new IllegalArgumentException(
          "unknown or incomplete options "
              + bad
              + "; known: --"
              + String.join(" V, --", known)
              + " V");
    }
    return options;
  }
}
