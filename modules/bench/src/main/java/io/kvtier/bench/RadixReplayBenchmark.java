package io.kvtier.bench;

import io.kvtier.simulator.workload.FixedTraces;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost per request of serving a fixed trace through a prefix cache: match and lock, allocate
 * the uncached rest (evicting LRU leaves when short), insert, free duplicates, unlock; see {@link
 * ReplayTarget}. Each invocation replays a whole trace into an emptied cache; the time is reported
 * per request. The trace is the method ({@code sharedPrefix}, {@code multiturn}) rather than a
 * parameter because {@code @OperationsPerInvocation} must be a constant per method.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
// JMH 1.37 reads field offsets through sun.misc.Unsafe, which JDK 24+ warns about on every fork
@Fork(value = 1, jvmArgsAppend = "--sun-misc-unsafe-memory-access=allow")
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class RadixReplayBenchmark {

  /** Which cache: {@link ReplayTargets#NAMES}. */
  @Param({"reference", "kvtier"})
  public String target;

  /** Tokens per page. */
  @Param({"1", "16", "64"})
  public int pageSize;

  /** Pool slots in tokens, or {@code unbounded}. */
  @Param({"unbounded", "65536"})
  public String capacity;

  private ReplayTarget cache;
  private int[][] sharedPrefix;
  private int[][] multiturn;

  /** Creates the benchmark; JMH instantiates it. */
  public RadixReplayBenchmark() {}

  /**
   * Creates the cache.
   *
   * @param prompts the traces
   */
  @Setup(Level.Trial)
  public void create(FixedTracePrompts prompts) {
    cache = ReplayTargets.create(target, pageSize, ReplayTargets.capacity(capacity));
    sharedPrefix = prompts.sharedPrefix;
    multiturn = prompts.multiturn;
  }

  /** Empties the cache before each whole-trace replay (milliseconds long, so this is cheap). */
  @Setup(Level.Invocation)
  public void reset() {
    cache.reset();
  }

  /**
   * Replays the shared-prefix trace.
   *
   * @return the cached tokens, for the blackhole
   */
  @Benchmark
  @OperationsPerInvocation(FixedTraces.SHARED_PREFIX_REQUESTS)
  public long sharedPrefix() {
    return replay(sharedPrefix);
  }

  /**
   * Replays the multiturn trace.
   *
   * @return the cached tokens, for the blackhole
   */
  @Benchmark
  @OperationsPerInvocation(FixedTraces.MULTITURN_REQUESTS)
  public long multiturn() {
    return replay(multiturn);
  }

  private long replay(int[][] prompts) {
    long cached = 0;
    for (int[] p : prompts) {
      cached += cache.replay(p);
    }
    return cached;
  }
}
