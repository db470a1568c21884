package io.kvtier.bench;

import io.kvtier.simulator.workload.FixedTraces;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The floor under any prefix cache's per-request cost: reading each prompt's tokens once, here as
 * one {@link Arrays#mismatch} of the prompt against an equal copy. A radix match must at least
 * compare every matched token, so no replay can beat this by much; the replay benchmarks' figures
 * read best as multiples of it. Reported per request (a whole-trace pass per invocation).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
// JMH 1.37 reads field offsets through sun.misc.Unsafe, which JDK 24+ warns about on every fork
@Fork(value = 1, jvmArgsAppend = "--sun-misc-unsafe-memory-access=allow")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class MismatchFloorBenchmark {

  private int[][] sharedPrefix;
  private int[][] sharedPrefixCopy;
  private int[][] multiturn;
  private int[][] multiturnCopy;

  /** Creates the benchmark; JMH instantiates it. */
  public MismatchFloorBenchmark() {}

  /**
   * Makes the copies, distinct arrays with equal contents, so that each mismatch reads both.
   *
   * @param prompts the traces
   */
  @Setup(Level.Trial)
  public void copy(FixedTracePrompts prompts) {
    sharedPrefix = prompts.sharedPrefix;
    sharedPrefixCopy = deepCopy(sharedPrefix);
    multiturn = prompts.multiturn;
    multiturnCopy = deepCopy(multiturn);
  }

  /**
   * Compares every prompt of the shared-prefix trace once.
   *
   * @return the tokens compared, for the blackhole
   */
  @Benchmark
  @OperationsPerInvocation(FixedTraces.SHARED_PREFIX_REQUESTS)
  public long sharedPrefix() {
    return compareAll(sharedPrefix, sharedPrefixCopy);
  }

  /**
   * Compares every prompt of the multiturn trace once.
   *
   * @return the tokens compared, for the blackhole
   */
  @Benchmark
  @OperationsPerInvocation(FixedTraces.MULTITURN_REQUESTS)
  public long multiturn() {
    return compareAll(multiturn, multiturnCopy);
  }

  static long compareAll(int[][] prompts, int[][] copies) {
    long equalTokens = 0;
    for (int i = 0; i < prompts.length; i++) {
      int m = Arrays.mismatch(prompts[i], copies[i]);
      equalTokens += m < 0 ? prompts[i].length : m;
    }
    return equalTokens;
  }

  private static int[][] deepCopy(int[][] a) {
    int[][] out = new int[a.length][];
    for (int i = 0; i < a.length; i++) {
      out[i] = a[i].clone();
    }
    return out;
  }
}
